"""Runs the unmodified upstream hlb-CIFAR10 `main.py` (path on the command
line; it is not part of loom) once, on local data in CIFAR-10's python format.

It builds the `data.pt` that main.py loads at import (normalized float16
images and one-hot targets, as main.py itself would write it), imports main.py
as a module from a scratch folder, overrides only its hyperparameter globals
(epochs, batch size, widths, EMA epochs) and calls its `main()` once. Run it
through loom's runner so that `import torch` inside main.py is loom:

    python3 -m loom.run examples/hlb_cifar10/run_upstream.py /path/to/main.py \\
        --data DIR [--epochs 1.5] [--batch 256] [--width 16]

The eval split must be a multiple of 2500 images (main.py evaluates in
batches of 2500).
"""
import argparse
import importlib.util
import os
import sys
import tempfile

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train import load_split  # noqa: E402  (the example's CIFAR-10 batch reader)


def write_data_pt(root, path):
    train_x, train_y = load_split(root, [f"data_batch_{i}" for i in range(1, 6)])
    eval_x, eval_y = load_split(root, ["test_batch"])
    std, mean = torch.std_mean(train_x, dim=(0, 2, 3))
    # main.py writes data.pt from its GPU tensors and uses what it loads as it is.
    device = "cuda" if torch.cuda.is_available() else "cpu"
    norm = lambda x: ((x - mean.view(1, -1, 1, 1)) / std.view(1, -1, 1, 1)).half().to(device)
    data = {"train": {"images": norm(train_x), "targets": F.one_hot(train_y).half().to(device)},
            "eval": {"images": norm(eval_x), "targets": F.one_hot(eval_y).half().to(device)}}
    torch.save(data, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("main_py")
    ap.add_argument("--data", required=True, help="folder holding cifar-10-batches-py")
    ap.add_argument("--epochs", type=float, default=1.5, help="fractional, as upstream (a whole number gives its last epoch no steps)")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--width", type=int, default=16, help="base depth (upstream: 64)")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="hlb-upstream-")
    write_data_pt(os.path.abspath(args.data), os.path.join(work, "data.pt"))
    os.chdir(work)  # main.py reads and writes data.pt relative to the working folder
    spec = importlib.util.spec_from_file_location("hlb_main", os.path.abspath(args.main_py))
    module = importlib.util.module_from_spec(spec)
    sys.modules["hlb_main"] = module
    spec.loader.exec_module(module)
    # Only hyperparameter globals change; main() reads them when called.
    module.batchsize = args.batch
    module.hyp["misc"]["train_epochs"] = args.epochs
    module.hyp["misc"]["ema"]["epochs"] = min(module.hyp["misc"]["ema"]["epochs"], int(args.epochs))
    module.hyp["net"]["base_depth"] = args.width
    scale = args.width / 64
    for key in ("init", "block1", "block2", "block3"):
        module.depths[key] = max(1, round(module.depths[key] * scale))
    accuracy = module.main()
    print(f"upstream main() returned ema_val_acc={accuracy}")
    print(f"steps per epoch {len(module.data['train']['images']) // module.batchsize}")


if __name__ == "__main__":
    main()
