"""Devices with torch's spelling: loom.device('cpu'), 'cuda', 'cuda:0'.

A process computes on one device, the one LOOM_DEVICE names (the CPU by
default, or CUDA), and every tensor lives there (`HOST`). Asking for 'cuda' in
a CPU process is accepted so that scripts written for a GPU run unchanged:
they run on the CPU after one warning. Asking for the CPU in a CUDA process
keeps the tensor on the GPU; values read out (tolist, numpy, item) come to
the host either way.
"""
import warnings

from . import _C

_TYPES = ("cpu", "cuda")
_warned = False


class device:
    """torch.device: a type ('cpu' or 'cuda') and an optional index."""

    def __init__(self, type, index=None):
        if isinstance(type, device):
            type, index = type.type, type.index
        elif isinstance(type, int) and not isinstance(type, bool):
            type, index = "cuda", type
        elif isinstance(type, str) and ":" in type:
            type, _, idx = type.partition(":")
            if not idx.isdigit() or index is not None:
                raise RuntimeError(f"Invalid device string: '{type}:{idx}'")
            index = int(idx)
        if not isinstance(type, str) or type not in _TYPES:
            raise RuntimeError(f"Expected one of {', '.join(_TYPES)} device type at start of device string: {type}")
        self.type = type
        self.index = index

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self):
        return f"device(type='{self.type}')" if self.index is None else \
            f"device(type='{self.type}', index={self.index})"

    def __eq__(self, other):
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self):
        return hash((self.type, self.index))

    def __reduce__(self):
        return device, (self.type, self.index)


CPU = device("cpu")
HOST = device(_C.device()) if _C.device() == "cpu" else device("cuda", 0)


def resolve(dev):
    """The device a tensor asked to live on `dev` gets: always the process's; 'cuda' on the CPU warns once."""
    global _warned
    if dev is None:
        return HOST
    d = dev if isinstance(dev, device) else device(dev)
    if d.type == "cuda" and HOST.type == "cpu" and not _warned:
        _warned = True
        warnings.warn("loom: this process computes on the CPU (LOOM_DEVICE=CUDA selects the GPU); tensors and "
                      "modules sent to 'cuda' run on the CPU", stacklevel=3)
    return HOST


def is_device(x):
    """Whether `to(x)` means a device: a torch.device, a device string or a CUDA ordinal."""
    if isinstance(x, device) or (isinstance(x, int) and not isinstance(x, bool)):
        return True
    return isinstance(x, str) and x.partition(":")[0] in _TYPES
