"""The torch-compat shim: packages that present loom as `torch` and
`torchvision`, so that a script written for PyTorch runs on loom unchanged.

`python3 -m loom.run script.py` makes `import torch` load `loom.shim.torch`
(see loom/run.py); tests import `loom.shim.torch` directly, next to the real
torch. Every shim module ends with ``__getattr__ = unsupported(__name__)``: a
torch name the shim lacks raises NotImplementedError naming it, never an
AttributeError from somewhere deep inside.
"""

_PREFIX = __name__ + "."


def public_name(module_name):
    """'loom.shim.torch.nn' -> 'torch.nn': the name a script uses."""
    return module_name[len(_PREFIX):] if module_name.startswith(_PREFIX) else module_name


class UnsupportedError(NotImplementedError, AttributeError):
    """A torch API loom does not provide. An AttributeError too, so that
    `hasattr(torch, name)` and `getattr(torch, name, default)` answer as they would
    for a torch build without that feature."""


def unsupported_error(module, name):
    """The error for torch's `module.name` that the shim lacks, with the reason
    where it is left out on purpose (policy.py)."""
    from .policy import reason
    why = reason(module, name)
    return UnsupportedError(f"{module}.{name} is not supported by loom" + (f": {why}" if why else ""))


def unsupported(module_name):
    """A module-level __getattr__ that names the missing torch API."""
    public = public_name(module_name)

    def __getattr__(name):
        if name.startswith("__") and name.endswith("__"):  # import machinery probes (__path__, __file__, ...)
            raise AttributeError(f"module {public!r} has no attribute {name!r}")
        raise unsupported_error(public, name)
    return __getattr__
