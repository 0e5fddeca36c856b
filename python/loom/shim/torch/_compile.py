"""torch.compile on loom: the function or module under loom's JIT (loom.jit)
wherever a replay gives what an eager call gives, eagerly elsewhere.

A capture replays kernels, not Python, so each call signature gets its own
capture, as torch.compile guards and recompiles: the tensors' shapes, dtypes
and strides, the other arguments' values (floats excepted: they are inputs),
grad mode and a module's training flags. A capture is also redone when an
optimizer alive at its first call has other hyperparameters now (a step
reads lr as a constant). After RECOMPILE_LIMIT captures (torch's cache size
limit), new signatures run eagerly: a schedule that changes lr every step
never replays. A signature whose first call returns anything but tensors, or
a tensor that requires grad (a forward under autograd, whose backward runs
outside it: a capture keeps no autograd graph), runs eagerly from then on.
A module's parameters and buffers are inputs of its captures, so a replay
reads their values as they are at the call (after an optimizer step, a
load_state_dict or a reassignment). Other Python values a function reads
(globals, attributes) are constants of its capture, as in loom.jit.
"""
import loom
from loom import _C

from .nn.module import Module
from .optim.optimizer import hyperparameters

_EAGER = "eager"
RECOMPILE_LIMIT = 8


def _signature(value):
    """What a capture is specific to in one argument; None when it cannot be told (run eagerly)."""
    if isinstance(value, _C.Tensor):
        return ("tensor", tuple(value.shape), str(value.dtype), tuple(value.stride()))
    if isinstance(value, float):
        return ("float",)
    if isinstance(value, (list, tuple)):
        parts = tuple(_signature(v) for v in value)
        return None if None in parts else (type(value), parts)
    try:
        hash(value)
    except TypeError:
        return None
    return (type(value), value)


def _tensors_only(out):
    """Whether a capture can return `out`: None, or tensors that need no autograd graph."""
    if out is None:
        return True
    if isinstance(out, _C.Tensor):
        return not out.requires_grad
    return isinstance(out, (list, tuple)) and all(isinstance(o, _C.Tensor) and not o.requires_grad for o in out)


class _Compiled:
    """Calls `target` through one loom.jit capture per call signature."""

    def __init__(self, target, module=None):
        self._target = target
        self._module = module
        self._entries = {}  # signature -> (a loom.jit, or _EAGER; the optimizers' hyperparameters then)
        self._made = 0  # captures made
        self._name = getattr(target, "__name__", type(target).__name__)

    def _state(self):
        if self._module is None:
            return []
        return list(self._module.parameters()) + list(self._module.buffers())

    def _key(self, state, args, kwargs):
        names = sorted(kwargs)
        parts = [_signature(state), _signature(tuple(args))] + [_signature(kwargs[k]) for k in names]
        if None in parts:
            return None
        flags = tuple(m.training for m in self._module.modules()) if self._module is not None else ()
        return (loom.is_grad_enabled(), flags, tuple(names), tuple(parts))

    def _run(self, state, *args, **kwargs):  # `state` is there to be bound by the capture
        return self._target(*args, **kwargs)

    def __call__(self, *args, **kwargs):
        state = self._state()
        key = self._key(state, args, kwargs)
        if key is None:
            return self._target(*args, **kwargs)
        entry, then = self._entries.get(key, (None, None))
        now = hyperparameters()
        if entry is not None and entry is not _EAGER and any(now.get(o, v) != v for o, v in then.items()):
            entry = None  # an optimizer changed since: capture again
        if entry is None:  # a new signature: eagerly, and decide
            out = self._target(*args, **kwargs)
            if not _tensors_only(out):
                self._entries[key] = (_EAGER, now)
            elif self._made < RECOMPILE_LIMIT:
                self._made += 1
                self._entries[key] = (loom.jit(self._run, name=self._name), now)
            else:
                self._entries.pop(key, None)
            return out
        if entry is _EAGER:
            return self._target(*args, **kwargs)
        return entry(state, *args, **kwargs)

    @property
    def captures(self):
        """How many call signatures run under a capture."""
        return sum(1 for e, _ in self._entries.values() if e is not _EAGER)


class OptimizedModule(Module):
    """What torch.compile returns for a module: the module as `_orig_mod`, called through its captures."""

    def __init__(self, mod):
        super().__init__()
        self._orig_mod = mod
        object.__setattr__(self, "_compiled", _Compiled(mod, module=mod))

    def forward(self, *args, **kwargs):
        return self._compiled(*args, **kwargs)

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.__dict__["_modules"]["_orig_mod"], name)


def compile(model=None, **kwargs):
    """torch.compile: `model` (a function or a module) under loom's JIT; the
    keyword arguments (backend, mode, fullgraph, dynamic, ...) are accepted and
    change nothing."""
    if model is None:
        return lambda m: compile(m, **kwargs)
    if isinstance(model, Module):
        return OptimizedModule(model)
    if not callable(model):
        raise TypeError(f"torch.compile expected a function or an nn.Module, got {type(model).__name__}")
    compiled = _Compiled(model)

    def run(*args, **kw):
        return compiled(*args, **kw)

    run.__wrapped__ = model
    run.__name__ = getattr(model, "__name__", "compiled")
    run._compiled = compiled
    return run
