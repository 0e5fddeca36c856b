"""torch.save / torch.load: nested dicts, lists and tuples of tensors, numbers
and strings, pickled with each tensor stored as a numpy array (Tensor.__reduce__
in loom/tensor_compat.py)."""
import os
import pickle

from loom.shim import unsupported


def save(obj, f, pickle_module=pickle, pickle_protocol=2, **kwargs):
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as fh:
            pickle_module.dump(obj, fh, protocol=max(pickle_protocol, 4))
    else:
        pickle_module.dump(obj, f, protocol=max(pickle_protocol, 4))


def load(f, map_location=None, pickle_module=pickle, weights_only=False, **kwargs):
    """map_location is accepted: every tensor loads onto the CPU."""
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            return pickle_module.load(fh)
    return pickle_module.load(f)


__getattr__ = unsupported(__name__)
