"""torchvision.transforms on loom: Compose, ToTensor and Normalize."""
import numpy as np

import loom
from loom.shim import unsupported

__getattr__ = unsupported(__name__)
_NUMPY = {loom.float16: np.float16, loom.float32: np.float32, loom.float64: np.float64}


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
    """(image - mean) / std per channel, for any (..., C, H, W) float tensor (a batch too)."""

    def __init__(self, mean, std, inplace=False):
        self.mean, self.std, self.inplace = mean, std, inplace

    def __call__(self, t):
        if not t.dtype.is_floating_point:
            raise TypeError(f"Input tensor should be a float tensor. Got {t.dtype}.")
        if t.ndim < 3:
            raise ValueError(f"Expected tensor to be a tensor image of size (..., C, H, W). Got tensor.size() = "
                             f"{tuple(t.shape)}")
        # the zero check on the host values (a read of the tensor would realize it on every call)
        host_std = self.std.numpy() if isinstance(self.std, loom.Tensor) else np.asarray(self.std, dtype=np.float64)
        if (host_std.astype(_NUMPY.get(t.dtype, np.float32)) == 0).any():
            raise ValueError(f"std evaluated to zero after conversion to {t.dtype}, leading to division by zero.")
        mean = loom.as_tensor(self.mean, dtype=t.dtype)
        std = loom.as_tensor(self.std, dtype=t.dtype)
        if mean.ndim == 1:
            mean = mean.reshape(-1, 1, 1)
        if std.ndim == 1:
            std = std.reshape(-1, 1, 1)
        if self.inplace:
            return t.sub_(mean).div_(std)
        return (t - mean) / std

    def __repr__(self):
        return f"Normalize(mean={self.mean}, std={self.std})"
