"""CIFAR-10 training after the published hlb-CIFAR10 recipe, as a plain
PyTorch script: it runs under torch, and unchanged under loom through the
runner (`python3 -m loom.run examples/hlb_cifar10/train.py`).

The recipe: a frozen first convolution that whitens 2x2 patches (its filters
are the eigenvectors of the patch covariance, scaled by 1/sqrt(eigenvalue),
each with its negative), three conv groups (conv, max pool, BatchNorm, GELU,
conv, BatchNorm, GELU) of widths 1x, 4x and 8x the base width whose convs start
as identity (dirac) maps, a global max pool, a linear head scaled by 1/9,
label-smoothed cross-entropy on one-hot (and, late in training, cutmix)
targets summed over the batch, nesterov SGD with separate learning rates and
weight decay for biases under a linear one-cycle schedule, an exponential
moving average of the weights, and flipped test-time augmentation.

Environment: DATA (a folder holding cifar-10-batches-py; default data),
STEPS (stop after this many steps; default: the whole schedule), BS (batch
size, 512), EPOCHS (10), WIDTH (base width, 64), SEED (0), PLOT (write a
loss/accuracy plot to this .png path), PROGRESS (1: a tqdm progress bar per
epoch, where tqdm is installed).
"""
import copy
import math
import os
import pickle
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

DATA = os.environ.get("DATA", "data")
STEPS = int(os.environ.get("STEPS", "0"))
BS = int(os.environ.get("BS", "512"))
EPOCHS = float(os.environ.get("EPOCHS", "10"))
WIDTH = int(os.environ.get("WIDTH", "64"))
SEED = int(os.environ.get("SEED", "0"))
PLOT = os.environ.get("PLOT")
PROGRESS = os.environ.get("PROGRESS") == "1"

HYP = {
    "lr": 1.525 / 512, "bias_lr": 1.525 * 64 / 512,           # per summed-loss unit
    "decay": 6.687e-4 * BS, "bias_decay": 6.687e-4 * BS / 64,  # the loss is a sum: decay scales with the batch
    "momentum": 0.85, "pct_start": 0.23, "final_lr_ratio": 0.07, "label_smoothing": 0.2,
    "bn_momentum": 0.4, "bn_eps": 1e-12, "head_scale": 1 / 9, "whiten_kernel": 2, "whiten_eps": 1e-2,
    "pad": 2, "cutmix_size": 3, "cutmix_epochs": 6, "ema_epochs": 10, "ema_every": 5, "ema_decay": 0.95,
    "ema_pow": 3.0,
}


# ---- data
def load_split(root, names):
    images, labels = [], []
    for name in names:
        with open(os.path.join(root, "cifar-10-batches-py", name), "rb") as f:
            batch = pickle.load(f, encoding="bytes")
        images.append(np.asarray(batch[b"data"], dtype=np.uint8).reshape(-1, 3, 32, 32))
        labels.append(np.asarray(batch[b"labels"], dtype=np.int64))
    return torch.tensor(np.concatenate(images)).float().div(255), torch.tensor(np.concatenate(labels))


def load_data(root):
    train_x, train_y = load_split(root, [f"data_batch_{i}" for i in range(1, 6)])
    test_x, test_y = load_split(root, ["test_batch"])
    std, mean = torch.std_mean(train_x, dim=(0, 2, 3))
    norm = lambda x: (x - mean.view(1, 3, 1, 1)) / std.view(1, 3, 1, 1)
    return {"train": (norm(train_x), F.one_hot(train_y, 10).float()),
            "test": (norm(test_x), F.one_hot(test_y, 10).float())}


def random_crop(images, size):
    """Each image cut at its own random offset (the padded border gives the room)."""
    n, _, h, w = images.shape
    dy = torch.randint(0, h - size + 1, (n,))
    dx = torch.randint(0, w - size + 1, (n,))
    rows = (dy.view(n, 1, 1, 1) + torch.arange(size).view(1, 1, size, 1)).expand(n, images.shape[1], size, w)
    images = torch.gather(images, 2, rows)
    cols = (dx.view(n, 1, 1, 1) + torch.arange(size).view(1, 1, 1, size)).expand(n, images.shape[1], size, size)
    return torch.gather(images, 3, cols)


def random_flip(images):
    flip = torch.rand(images.shape[0]).view(-1, 1, 1, 1) < 0.5
    return torch.where(flip, images.flip(-1), images)


def cutmix(images, targets, size):
    """A size x size square of each image (and its share of the label) from another image of the batch."""
    n, _, h, w = images.shape
    other = torch.randperm(n)
    cy = torch.randint(0, h - size + 1, (n, 1, 1, 1))
    cx = torch.randint(0, w - size + 1, (n, 1, 1, 1))
    ys = torch.arange(h).view(1, 1, h, 1)
    xs = torch.arange(w).view(1, 1, 1, w)
    square = (ys >= cy) & (ys < cy + size) & (xs >= cx) & (xs < cx + size)
    mixed = torch.where(square, images.index_select(0, other), images)
    share = size * size / (h * w)
    return mixed, (1 - share) * targets + share * targets.index_select(0, other)


def batches(images, targets, batch_size, shuffle):
    order = torch.randperm(images.shape[0]) if shuffle else torch.arange(images.shape[0])
    for i in range(images.shape[0] // batch_size):
        idx = order[i * batch_size:(i + 1) * batch_size]
        yield images.index_select(0, idx), targets.index_select(0, idx)


# ---- network
class BatchNorm(nn.BatchNorm2d):
    """Scale fixed at 1 (not trained), shift trained."""

    def __init__(self, channels):
        super().__init__(channels, eps=HYP["bn_eps"], momentum=HYP["bn_momentum"])
        self.weight.requires_grad = False


class ConvGroup(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, padding="same", bias=False)
        self.pool = nn.MaxPool2d(2)
        self.norm1 = BatchNorm(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding="same", bias=False)
        self.norm2 = BatchNorm(c_out)
        self.act = nn.GELU()

    def forward(self, x):
        x = self.act(self.norm1(self.pool(self.conv1(x))))
        return self.act(self.norm2(self.conv2(x)))


class Net(nn.Module):
    def __init__(self, width):
        super().__init__()
        k = HYP["whiten_kernel"]
        self.whiten = nn.Conv2d(3, 2 * 3 * k * k, k, bias=False)
        self.whiten.weight.requires_grad = False  # set from the data (init_net), never trained
        self.act = nn.GELU()
        self.groups = nn.Sequential(ConvGroup(2 * 3 * k * k, width), ConvGroup(width, 4 * width),
                                    ConvGroup(4 * width, 8 * width))
        self.head = nn.Linear(8 * width, 10, bias=False)

    def forward(self, x):
        if not self.training:  # test-time augmentation: the mean of the image and its mirror
            x = torch.cat([x, x.flip(-1)])
        x = self.groups(self.act(self.whiten(x)))
        x = self.head(torch.amax(x, dim=(2, 3))) * HYP["head_scale"]
        if not self.training:
            plain, mirrored = x.chunk(2)
            x = 0.5 * plain + 0.5 * mirrored
        return x


@torch.no_grad()
def init_net(net, images):
    # Whitening: eigenvectors of the covariance of the images' k x k patches.
    k = HYP["whiten_kernel"]
    patches = images.unfold(2, k, 1).unfold(3, k, 1).permute(0, 2, 3, 1, 4, 5).reshape(-1, 3 * k * k)
    eigenvalues, eigenvectors = torch.linalg.eigh(torch.cov(patches.t()), UPLO="U")
    filters = (eigenvectors.t() / torch.sqrt(eigenvalues + HYP["whiten_eps"]).view(-1, 1)).flip(0)
    filters = filters.reshape(3 * k * k, 3, k, k)
    net.whiten.weight.copy_(torch.cat([filters, -filters]))
    # Each group starts close to an identity map, keeping its random init's statistics.
    for group in net.groups:
        w = group.conv1.weight
        std, mean = torch.std_mean(w)
        w.add_(nn.init.dirac_(torch.empty_like(w)))
        new_std, new_mean = torch.std_mean(w)
        w.sub_(new_mean).div_(new_std).mul_(std).add_(mean)
        nn.init.dirac_(group.conv2.weight)


class EMA:
    """Exponential moving average of the weights, copied back into the net (except frozen parts)."""

    def __init__(self, net):
        self.net = copy.deepcopy(net).eval()
        for p in self.net.parameters():
            p.requires_grad_(False)

    @torch.no_grad()
    def update(self, net, decay):
        mine = self.net.state_dict()
        for name, value in net.state_dict().items():
            if value.dtype.is_floating_point:
                mine[name].mul_(decay).add_(value * (1 - decay))
                if not name.startswith("whiten") and not ("norm" in name and name.endswith("weight")):
                    value.copy_(mine[name])


def update_ema(ema, net, step, total_steps):
    """Every ema_every steps: start the average, or move it (copying it back into the net)."""
    if step % HYP["ema_every"] != 0:
        return ema
    if ema is None:
        return EMA(net)
    ema.update(net, HYP["ema_decay"] ** HYP["ema_every"] * (step / total_steps) ** HYP["ema_pow"])
    return ema


def make_optimizer(net, total_steps):
    """Nesterov SGD, biases in their own group, under a linear one-cycle schedule."""
    biases = [p for name, p in net.named_parameters() if p.requires_grad and "bias" in name]
    others = [p for name, p in net.named_parameters() if p.requires_grad and "bias" not in name]
    opt = torch.optim.SGD([{"params": others, "lr": HYP["lr"], "weight_decay": HYP["decay"]},
                           {"params": biases, "lr": HYP["bias_lr"], "weight_decay": HYP["bias_decay"]}],
                          lr=HYP["lr"], momentum=HYP["momentum"], nesterov=True)
    div = 1e16  # the schedule starts from (almost) zero
    sched = torch.optim.lr_scheduler.OneCycleLR(
        opt, max_lr=[HYP["lr"], HYP["bias_lr"]], total_steps=total_steps, pct_start=HYP["pct_start"],
        div_factor=div, final_div_factor=1 / (div * HYP["final_lr_ratio"]), anneal_strategy="linear",
        cycle_momentum=False)
    return opt, sched


def make_loss():
    return nn.CrossEntropyLoss(label_smoothing=HYP["label_smoothing"], reduction="none")


def train_step(net, opt, sched, loss_fn, x, y):
    """One step; returns the loss (summed over the batch, scaled to a batch of 512) and the outputs."""
    out = net(x)
    loss = loss_fn(out, y).sum() * (512 / BS)
    loss.backward()
    opt.step()
    sched.step()
    opt.zero_grad(set_to_none=True)
    return loss, out


def accuracy(outputs, targets):
    return (outputs.argmax(-1) == targets.argmax(-1)).float().mean().item()


def evaluate(net, data, batch_size):
    net.eval()
    images, targets = data
    hits, losses, n = 0.0, 0.0, 0
    with torch.no_grad():
        for x, y in batches(images, targets, batch_size, shuffle=False):
            out = net(x)
            hits += accuracy(out, y) * x.shape[0]
            losses += F.cross_entropy(out, y, label_smoothing=HYP["label_smoothing"]).item() * x.shape[0]
            n += x.shape[0]
    return losses / max(n, 1), hits / max(n, 1)


def progress(total, desc):
    """A tqdm bar over an epoch's steps when PROGRESS=1 and tqdm is there, else None."""
    if not PROGRESS:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=desc, unit="step", leave=False)


def main():
    torch.manual_seed(SEED)
    data = load_data(DATA)
    train_x, train_y = data["train"]
    pad = HYP["pad"]
    padded = F.pad(train_x, (pad, pad, pad, pad), mode="reflect")
    net = Net(WIDTH)
    init_net(net, train_x[: min(10000, train_x.shape[0])])

    steps_per_epoch = train_x.shape[0] // BS
    total_steps = math.ceil(steps_per_epoch * EPOCHS)
    if STEPS:
        total_steps = min(total_steps, STEPS)
    opt, sched = make_optimizer(net, total_steps)
    loss_fn = make_loss()
    ema, ema_start = None, math.floor(EPOCHS) - HYP["ema_epochs"]
    history, curve, step, elapsed = [], [], 0, 0.0
    test_batch = min(1000, data["test"][0].shape[0])
    print(f"train {train_x.shape[0]} images, test {data['test'][0].shape[0]}, batch {BS}, "
          f"{total_steps} steps, width {WIDTH}")
    for epoch in range(math.ceil(total_steps / max(steps_per_epoch, 1))):
        start = time.time()
        net.train()
        images = random_flip(random_crop(padded, 32))
        targets = train_y
        if epoch >= EPOCHS - HYP["cutmix_epochs"]:
            images, targets = cutmix(images, targets, HYP["cutmix_size"])
        train_loss = train_acc = float("nan")
        bar = progress(min(steps_per_epoch, total_steps - step), f"epoch {epoch}")
        for x, y in batches(images, targets, BS, shuffle=True):
            loss, out = train_step(net, opt, sched, loss_fn, x, y)
            step += 1
            train_loss = loss.item() / 512
            train_acc = accuracy(out.detach(), y)
            curve.append((step, train_loss, train_acc))
            if epoch >= ema_start:
                ema = update_ema(ema, net, step, total_steps)
            if bar is not None:
                bar.update(1)
                bar.set_postfix(loss=f"{train_loss:.3f}", acc=f"{train_acc:.3f}")
            if step >= total_steps:
                break
        if bar is not None:
            bar.close()
        elapsed += time.time() - start
        val_loss, val_acc = evaluate(net, data["test"], test_batch)
        ema_acc = evaluate(ema.net, data["test"], test_batch)[1] if ema is not None else float("nan")
        history.append((step, train_loss, train_acc, val_loss, val_acc))
        print(f"epoch {epoch:3d}  step {step:5d}  train loss {train_loss:.4f}  train acc {train_acc:.4f}  "
              f"val loss {val_loss:.4f}  val acc {val_acc:.4f}  ema val acc {ema_acc:.4f}  time {elapsed:.1f}s",
              flush=True)
        if step >= total_steps:
            break
    if PLOT:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        steps_, tl, ta = zip(*curve)
        epochs_, _, _, vl, va = zip(*history)
        fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
        for ax, train, val, name in ((a, tl, vl, "loss"), (b, ta, va, "accuracy")):
            ax.plot(steps_, train, label="train (each step's batch)", linewidth=0.8)
            ax.plot(epochs_, val, "o-", label="test (end of epoch)")
            ax.set_xlabel("step")
            ax.set_ylabel(name)
            ax.legend()
        fig.savefig(PLOT)
        print(f"plot written to {PLOT}")
    return history


if __name__ == "__main__":
    main()
