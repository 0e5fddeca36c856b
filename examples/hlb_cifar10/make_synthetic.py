"""Writes a small synthetic dataset in CIFAR-10's python format
(cifar-10-batches-py: data_batch_1..5, test_batch, batches.meta), so the real
loading code of a CIFAR-10 script runs without the real data.

Each class has its own colour and stripe pattern under noise, so a network
can learn it: accuracy above chance shows training works.

    /usr/bin/python3 examples/hlb_cifar10/make_synthetic.py OUT_DIR [--train N] [--test N] [--seed S]
"""
import argparse
import os
import pickle

import numpy as np

CLASSES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]


def images_for(labels, rng):
    n = len(labels)
    yy, xx = np.mgrid[0:32, 0:32]
    out = np.empty((n, 3, 32, 32), dtype=np.float32)
    for c in range(10):
        sel = labels == c
        colour = np.array([(c * 37) % 256, (c * 91) % 256, (c * 53) % 256], dtype=np.float32)
        stripes = np.sin((xx * np.cos(c) + yy * np.sin(c)) * (0.3 + 0.05 * c)) * 60
        out[sel] = colour[:, None, None] * 0.6 + stripes[None]
    out += rng.normal(0, 40, size=out.shape)
    return np.clip(out + 50, 0, 255).astype(np.uint8).reshape(n, 3072)


def write_batch(path, labels, rng, name):
    with open(path, "wb") as f:
        pickle.dump({b"batch_label": name.encode(), b"labels": [int(x) for x in labels],
                     b"data": images_for(labels, rng),
                     b"filenames": [f"synthetic_{i}.png".encode() for i in range(len(labels))]}, f)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--train", type=int, default=5000, help="training images in all (split over 5 batches)")
    ap.add_argument("--test", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    root = os.path.join(args.out, "cifar-10-batches-py")
    os.makedirs(root, exist_ok=True)
    per_batch = args.train // 5
    for b in range(5):
        write_batch(os.path.join(root, f"data_batch_{b + 1}"), rng.integers(0, 10, per_batch), rng,
                    f"training batch {b + 1} of 5")
    write_batch(os.path.join(root, "test_batch"), rng.integers(0, 10, args.test), rng, "testing batch 1 of 1")
    with open(os.path.join(root, "batches.meta"), "wb") as f:
        pickle.dump({b"label_names": [c.encode() for c in CLASSES], b"num_cases_per_batch": per_batch,
                     b"num_vis": 3072}, f)
    print(f"wrote {root}: {per_batch * 5} training and {args.test} test images")


if __name__ == "__main__":
    main()
