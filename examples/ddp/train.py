"""A small convolutional network trained with DistributedDataParallel: a
PyTorch script, unmodified for loom, that writes what each rank saw.

    /usr/bin/python3 train.py init OUT          # real torch: the initial weights, OUT/init.npz
    torchrun --nproc_per_node 2 train.py run OUT           # real torch's DDP (gloo)
    python3 -m loom.run --nproc 2 train.py run OUT         # loom's DDP (Open MPI)

`run` trains STEPS steps (default 20) on synthetic images, each rank on its
DistributedSampler share of every batch (the sampler unshuffled, so that
both engines see the same batches). Rank 0 loads OUT/init.npz; the others
keep their own random weights, which DDP's broadcast at wrap replaces.
Each rank writes OUT/<tag>-rank<r>.json (its loss and the loss averaged
over the ranks with all_reduce, per step) and OUT/<tag>-rank<r>.npz (its
final state), where <tag> is the TAG variable (default "run")."""
import json
import os
import sys

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

BATCH = 16  # per rank


def network():
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))


def dataset(n):
    """Images whose class is the quadrant and channel of their brightest patch."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((n, 3, 12, 12)).astype(np.float32)
    y = rng.integers(0, 10, n)
    for i, c in enumerate(y):
        q = int(c) % 4
        x[i, int(c) % 3, (q // 2) * 6:(q // 2) * 6 + 6, (q % 2) * 6:(q % 2) * 6 + 6] += 1.5
    return TensorDataset(torch.from_numpy(x), torch.from_numpy(y))


def train(out, steps):
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(100 + rank)
    model = network()
    if rank == 0:
        weights = np.load(os.path.join(out, "init.npz"))
        model.load_state_dict({k: torch.from_numpy(weights[k]) for k in weights.files})
    ddp = DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    data = dataset(BATCH * world * 10)
    sampler = DistributedSampler(data, shuffle=False)
    loader = DataLoader(data, batch_size=BATCH, sampler=sampler)
    losses, means, step = [], [], 0
    for epoch in range(steps):
        sampler.set_epoch(epoch)
        for x, y in loader:
            if step == steps:
                break
            loss = F.cross_entropy(ddp(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            mean = loss.detach().clone()
            dist.all_reduce(mean)
            losses.append(loss.item())
            means.append(mean.item() / world)
            step += 1
    tag = os.environ.get("TAG", "run")
    with open(os.path.join(out, f"{tag}-rank{rank}.json"), "w") as f:
        json.dump({"world": world, "losses": losses, "mean_losses": means}, f)
    np.savez(os.path.join(out, f"{tag}-rank{rank}.npz"),
             **{k: v.detach().numpy() for k, v in model.state_dict().items()})
    dist.destroy_process_group()


def main():
    mode, out = sys.argv[1], sys.argv[2]
    if mode == "init":
        torch.manual_seed(0)
        os.makedirs(out, exist_ok=True)
        np.savez(os.path.join(out, "init.npz"), **{k: v.numpy() for k, v in network().state_dict().items()})
    else:
        train(out, int(os.environ.get("STEPS", "20")))


if __name__ == "__main__":
    main()
