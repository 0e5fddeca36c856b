"""Converts Fashion-MNIST (Debian's dataset-fashion-mnist, idx files) to
CIFAR-10's python format, so a CIFAR-10 script trains on real images: each
28x28 grey image is padded to 32x32 and repeated over three channels.

    /usr/bin/python3 examples/hlb_cifar10/fashion_to_cifar.py OUT_DIR [--src /usr/share/datasets/fashion-mnist]
"""
import argparse
import gzip
import os
import pickle

import numpy as np

CLASSES = ["t-shirt", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker", "bag", "ankle-boot"]


def read_idx(path):
    """An idx file (gzip): magic (0, 0, type 0x08 = uint8, ndim), ndim big-endian sizes, then the bytes."""
    with gzip.open(path, "rb") as f:
        raw = f.read()
    if raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
        raise ValueError(f"{path}: not an idx file of unsigned bytes")
    ndim = raw[3]
    shape = tuple(int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim))
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(shape)


def as_cifar(images):
    padded = np.pad(images, ((0, 0), (2, 2), (2, 2)))
    return np.repeat(padded[:, None], 3, axis=1).reshape(len(images), 3072)


def write_batch(path, images, labels, name):
    with open(path, "wb") as f:
        pickle.dump({b"batch_label": name.encode(), b"labels": [int(x) for x in labels], b"data": as_cifar(images),
                     b"filenames": [f"fashion_{i}.png".encode() for i in range(len(labels))]}, f)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--src", default="/usr/share/datasets/fashion-mnist")
    args = ap.parse_args()
    train_x = read_idx(os.path.join(args.src, "train-images-idx3-ubyte.gz"))
    train_y = read_idx(os.path.join(args.src, "train-labels-idx1-ubyte.gz"))
    test_x = read_idx(os.path.join(args.src, "t10k-images-idx3-ubyte.gz"))
    test_y = read_idx(os.path.join(args.src, "t10k-labels-idx1-ubyte.gz"))
    root = os.path.join(args.out, "cifar-10-batches-py")
    os.makedirs(root, exist_ok=True)
    # CIFAR-10 has 50000 training images in 5 batches; Fashion-MNIST's 60000 go in 5 batches of 12000.
    for b, (xs, ys) in enumerate(zip(np.array_split(train_x, 5), np.array_split(train_y, 5))):
        write_batch(os.path.join(root, f"data_batch_{b + 1}"), xs, ys, f"training batch {b + 1} of 5")
    write_batch(os.path.join(root, "test_batch"), test_x, test_y, "testing batch 1 of 1")
    with open(os.path.join(root, "batches.meta"), "wb") as f:
        pickle.dump({b"label_names": [c.encode() for c in CLASSES], b"num_cases_per_batch": len(train_x) // 5,
                     b"num_vis": 3072}, f)
    print(f"wrote {root}: {len(train_x)} training and {len(test_x)} test images")


if __name__ == "__main__":
    main()
