"""`torchvision` on loom: datasets.CIFAR10, MNIST, FashionMNIST (local files only) and the
transforms a CIFAR script uses (Compose, ToTensor, Normalize). Any other name
raises NotImplementedError naming it."""
from loom.shim import unsupported

from . import datasets, transforms  # noqa: F401

__version__ = "0.14.1+loom"
__getattr__ = unsupported(__name__)
