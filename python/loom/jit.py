"""JIT capture and replay (loom/jit.h): ``step = loom.jit(train_step)``.

Call 1 runs the function eagerly, call 2 runs it and captures every kernel,
later calls replay the capture with the call's tensors bound, building,
scheduling and compiling nothing. Every call realizes the function's outputs
and every in-place update pending at its return, so state updated only as a
side effect (BatchNorm running statistics, momentum buffers, EMA weights)
keeps updating on replay.

How a call's arguments enter the capture:

- tensors (positional or keyword, also inside lists and tuples) are inputs;
- Python floats are scalar inputs: the function receives each as a 0-d
  float64 tensor, so a learning rate that changes every call is never baked;
- anything else (ints, bools, strings, None) is baked into the capture: a
  call where one differs from the capture's raises a ValueError naming it.

Outputs (a tensor, a list or tuple of tensors, or None) are new tensors on
every call and carry no autograd graph: run ``backward()`` inside the
function. ``LOOM_JIT=0`` runs every call eagerly.
"""
import functools

from . import _C

__all__ = ["Jit", "jit"]


def _flatten(value, tensors, scalars, baked, path):
    """The structure of `value` with tensors, floats and baked values replaced by their index."""
    if isinstance(value, _C.Tensor):
        tensors.append(value)
        return ("t", len(tensors) - 1)
    if isinstance(value, float):
        scalars.append(value)
        return ("s", len(scalars) - 1)
    if isinstance(value, (list, tuple)):
        return (type(value), [_flatten(v, tensors, scalars, baked, f"{path}[{i}]") for i, v in enumerate(value)])
    baked.append((path, value))
    return ("b", len(baked) - 1)


def _rebuild(spec, tensors, scalars, baked):
    kind, what = spec
    if kind == "t":
        return tensors[what]
    if kind == "s":
        return scalars[what]
    if kind == "b":
        return baked[what][1]
    return kind(_rebuild(s, tensors, scalars, baked) for s in what)


class Jit:
    """Captures `fn` on its second call and replays it from the third."""

    def __init__(self, fn, name=None):
        self.fn = fn
        self.name = name or getattr(fn, "__name__", "jit")
        self._c = _C.Jit(self._traced, self.name)
        self._baked = None  # the baked arguments of the capture's calls
        self._call = None  # this call's argument specs and baked values, for _traced
        self._returns = None  # how the function returned its tensors
        functools.update_wrapper(self, fn)

    def _traced(self, tensors, scalars):
        arg_specs, kw_specs, baked = self._call
        args = [_rebuild(a, tensors, scalars, baked) for a in arg_specs]
        kwargs = {k: _rebuild(v, tensors, scalars, baked) for k, v in kw_specs}
        out = self.fn(*args, **kwargs)
        if out is None:
            self._returns = None
            return []
        if isinstance(out, _C.Tensor):
            self._returns = _C.Tensor
            return [out]
        if isinstance(out, (list, tuple)) and all(isinstance(o, _C.Tensor) for o in out):
            self._returns = type(out)
            return list(out)
        raise TypeError(f"Jit '{self.name}': the function must return a tensor, a list or tuple of tensors, "
                        f"or None; it returned {type(out).__name__}")

    def __call__(self, *args, **kwargs):
        tensors, scalars, baked = [], [], []
        arg_specs = [_flatten(a, tensors, scalars, baked, f"argument {i}") for i, a in enumerate(args)]
        kw_specs = [(k, _flatten(v, tensors, scalars, baked, f"argument '{k}'")) for k, v in sorted(kwargs.items())]
        if self._baked is None or not _C.jit_enabled():
            self._baked = baked
        else:
            if [p for p, _ in baked] != [p for p, _ in self._baked]:
                raise ValueError(f"Jit '{self.name}': called with other kinds of arguments than its first call "
                                 f"(tensors, floats and baked values must keep their places)")
            for (path, now), (_, then) in zip(baked, self._baked):
                if type(now) is not type(then) or now != then:
                    raise ValueError(f"Jit '{self.name}': {path} was {then!r} when captured and is {now!r} now; "
                                     f"it is baked into the capture (only tensors and floats are inputs). "
                                     f"Call reset() to capture again")
        self._call = (arg_specs, kw_specs, baked)
        out = self._c(tensors, scalars)
        if self._returns is None:
            return None
        if self._returns is _C.Tensor:
            return out[0]
        return self._returns(out)

    def reset(self):
        """Drops the capture: the next call runs eagerly, the one after captures."""
        self._c.reset()
        self._baked = None

    @property
    def info(self):
        """calls, captured, kernels, host_steps and the capture's memory (planned_bytes, ...)."""
        return self._c.info


def jit(fn=None, *, name=None):
    """``@loom.jit`` or ``loom.jit(fn)``: the function under a Jit."""
    if fn is None:
        return lambda f: Jit(f, name)
    return Jit(fn, name)
