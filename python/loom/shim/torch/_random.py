"""torch's generators on loom's one Philox generator (loom/random.h): a state is the seed and
the number of draws made since seeding, 16 bytes as a uint8 tensor. `torch.Generator()`
objects keep a state of their own; an op given `generator=g` draws with g's state swapped in
and the global state restored after, so the global sequence is as if the draw never happened.
The numbers differ from torch's (another algorithm); what repeats and what is independent is
the same."""
import builtins
import contextlib
import os

import numpy as np

import loom as _loom
from loom import _C, Tensor

_MASK = (1 << 64) - 1
_DEFAULT_SEED = 67280421310721  # torch's seed for a new Generator


def _state_tensor(seed, draws):
    return _loom.from_numpy(np.array([seed, draws], dtype="<u8").view(np.uint8).copy())


def _state_of(new_state):
    if not isinstance(new_state, Tensor) or new_state.dtype != _loom.uint8:
        raise TypeError("RNG state must be a torch.ByteTensor")
    if new_state.numel() != 16:
        raise RuntimeError(f"Expected a loom RNG state of 16 bytes (its seed and draw count) but found the input RNG "
                           f"state size to be {new_state.numel()}")
    seed, draws = new_state.numpy().astype(np.uint8).view("<u8")
    return builtins.int(seed), builtins.int(draws)


class Generator:
    """torch.Generator with a state of its own (see the module's docstring)."""

    def __init__(self, device="cpu"):
        self.device = device
        self.manual_seed(_DEFAULT_SEED)

    def manual_seed(self, seed):
        self._initial = builtins.int(seed)
        self._set(self._initial & _MASK, 0)
        return self

    def initial_seed(self):
        return self._initial

    def seed(self):
        """Seeds from the operating system's entropy, as torch's does; returns the seed."""
        new = builtins.int.from_bytes(os.urandom(8), "little") >> 1
        self.manual_seed(new)
        return new

    def get_state(self):
        return _state_tensor(*self._get())

    def set_state(self, new_state):
        self._set(*_state_of(new_state))
        return self

    def _get(self):
        return self._state

    def _set(self, seed, draws):
        self._state = (seed, draws)

    @contextlib.contextmanager
    def drawing(self):
        """Draws inside use this generator's state (and advance it)."""
        saved = _C._rng_state()
        _C._set_rng_state(*self._state)
        try:
            yield
        finally:
            self._state = _C._rng_state()
            _C._set_rng_state(*saved)


class _DefaultGenerator(Generator):
    """torch.default_generator: the global state itself."""

    def _get(self):
        return _C._rng_state()

    def _set(self, seed, draws):
        _C._set_rng_state(seed, draws)

    def drawing(self):
        return contextlib.nullcontext()


default_generator = _DefaultGenerator()


def drawing(generator):
    """The context in which an op with generator= draws."""
    return (generator or default_generator).drawing()


def with_generator(fn):
    """fn with torch's keyword `generator`."""
    def call(*args, generator=None, **kwargs):
        with drawing(generator):
            return fn(*args, **kwargs)
    call.__name__ = call.__qualname__ = fn.__name__
    call.__doc__ = fn.__doc__
    return call


def manual_seed(seed):
    """Seeds loom's generator (Philox: the numbers differ from torch's, the seeding discipline is the same)."""
    return default_generator.manual_seed(seed)


def seed():
    return default_generator.seed()


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(new_state):
    default_generator.set_state(new_state)
