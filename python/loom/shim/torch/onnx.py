"""torch.onnx, importable so that a script that imports it runs; each of its names raises
NotImplementedError with the reason (policy.py: ONNX export is left out on purpose)."""
from loom.shim import unsupported

__loom_placeholder__ = True  # the audit counts torch.onnx as left out, not implemented
__getattr__ = unsupported(__name__)
