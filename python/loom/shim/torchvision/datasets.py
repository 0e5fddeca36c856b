"""torchvision.datasets on loom: CIFAR10 from a local cifar-10-batches-py."""
import os
import pickle

import numpy as np

from loom.shim import unsupported

__getattr__ = unsupported(__name__)


class CIFAR10:
    """torchvision.datasets.CIFAR10 over ROOT/cifar-10-batches-py. Nothing is
    downloaded: with download=True the files must already be there. Items are
    (HWC uint8 image array, int label), after transform / target_transform."""

    base_folder = "cifar-10-batches-py"
    classes = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]

    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        self.root, self.train = os.path.expanduser(root), train
        self.transform, self.target_transform = transform, target_transform
        folder = os.path.join(self.root, self.base_folder)
        names = [f"data_batch_{i}" for i in range(1, 6)] if train else ["test_batch"]
        missing = [n for n in names if not os.path.isfile(os.path.join(folder, n))]
        if missing:
            raise RuntimeError(f"CIFAR10: {os.path.join(folder, missing[0])} not found. loom does not download "
                               f"datasets: put the python version of CIFAR-10 (cifar-10-batches-py) under {self.root}")
        images, labels = [], []
        for name in names:
            with open(os.path.join(folder, name), "rb") as f:
                batch = pickle.load(f, encoding="bytes")
            images.append(np.asarray(batch[b"data"], dtype=np.uint8).reshape(-1, 3, 32, 32))
            labels.extend(int(x) for x in batch[b"labels"])
        self.data = np.ascontiguousarray(np.concatenate(images).transpose(0, 2, 3, 1))  # N, H, W, C as torchvision
        self.targets = labels

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, index):
        image, target = self.data[index], self.targets[index]
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target
