"""torchvision.datasets on loom: CIFAR10 from a local cifar-10-batches-py,
MNIST and FashionMNIST from local idx files. Nothing is downloaded."""
import gzip
import os
import pickle

import numpy as np

from loom.shim import unsupported

__getattr__ = unsupported(__name__)


def _transformed(dataset, image, target):
    """An item after the dataset's transform and target_transform, where set."""
    if dataset.transform is not None:
        image = dataset.transform(image)
    if dataset.target_transform is not None:
        target = dataset.target_transform(target)
    return image, target


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
        return _transformed(self, self.data[index], self.targets[index])


def _read_idx(path):
    """An idx file of unsigned bytes (gzip or not): the array it holds."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    if raw[:3] != b"\x00\x00\x08":
        raise RuntimeError(f"{path}: not an idx file of unsigned bytes")
    ndim = raw[3]
    shape = tuple(int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim))
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(shape)


class MNIST:
    """torchvision.datasets.MNIST over ROOT/MNIST/raw (the idx files, gzip or
    not; with download=True they must already be there). Items are (HW uint8
    image array, int label) after transform / target_transform; `data` and
    `targets` are tensors, as torchvision's."""

    classes = ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five", "6 - six", "7 - seven",
               "8 - eight", "9 - nine"]

    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        self.root, self.train = os.path.expanduser(root), train
        self.transform, self.target_transform = transform, target_transform
        prefix = "train" if train else "t10k"
        # items are read from these host arrays: no engine work per item
        self._images = self._load(f"{prefix}-images-idx3-ubyte")
        self._labels = self._load(f"{prefix}-labels-idx1-ubyte").astype(np.int64)

    @property
    def data(self):
        import loom
        return loom.from_numpy(self._images.copy())

    @property
    def targets(self):
        import loom
        return loom.from_numpy(self._labels.copy())

    @property
    def raw_folder(self):
        return os.path.join(self.root, type(self).__name__, "raw")

    def _load(self, name):
        for path in (os.path.join(self.raw_folder, name), os.path.join(self.raw_folder, name + ".gz")):
            if os.path.isfile(path):
                return _read_idx(path)
        raise RuntimeError(f"{type(self).__name__}: {os.path.join(self.raw_folder, name)} not found. loom does not "
                           f"download datasets: put the idx files (gzip or not) in {self.raw_folder}")

    def __len__(self):
        return len(self._labels)

    def __getitem__(self, index):
        return _transformed(self, self._images[index], int(self._labels[index]))


class FashionMNIST(MNIST):
    """torchvision.datasets.FashionMNIST over ROOT/FashionMNIST/raw (Debian's dataset-fashion-mnist has the files)."""

    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
               "Ankle boot"]
