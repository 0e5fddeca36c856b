"""`torchvision` on loom. Datasets and transforms are not provided yet: every
name raises NotImplementedError naming it."""
from loom.shim import unsupported

__version__ = "0.14.1+loom"
__getattr__ = unsupported(__name__)
