"""torch.optim on loom: Optimizer, SGD, Adam, AdamW, Adadelta and lr_scheduler."""
from loom.shim import unsupported
from .optimizer import Optimizer  # noqa: F401
from .sgd import SGD  # noqa: F401
from .adam import Adam, AdamW  # noqa: F401
from .adadelta import Adadelta  # noqa: F401
from . import lr_scheduler  # noqa: F401
from . import optimizer  # noqa: F401

__getattr__ = unsupported(__name__)
