"""torchvision.transforms on loom: Compose, ToTensor and Normalize."""
import numpy as np

import loom
from loom.shim import unsupported

__getattr__ = unsupported(__name__)


class Compose:
    def __init__(self, transforms):
        self.transforms = list(transforms)

    def __call__(self, x):
        for t in self.transforms:
            x = t(x)
        return x


class ToTensor:
    """An HWC uint8 image (array, or anything numpy.asarray reads) to a CHW float32 tensor in [0, 1]."""

    def __call__(self, image):
        a = np.asarray(image)
        if a.ndim == 2:
            a = a[:, :, None]
        out = a.transpose(2, 0, 1).astype(np.float32)
        if a.dtype == np.uint8:
            out /= 255.0
        return loom.from_numpy(np.ascontiguousarray(out))


class Normalize:
    def __init__(self, mean, std, inplace=False):
        self.mean, self.std = list(mean), list(std)

    def __call__(self, t):
        c = t.shape[0]
        mean = loom.tensor(self.mean, dtype=t.dtype).reshape(c, 1, 1)
        std = loom.tensor(self.std, dtype=t.dtype).reshape(c, 1, 1)
        return (t - mean) / std
