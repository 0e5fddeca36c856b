"""Differential training check of the example: the same initial weights and
the same batches, trained by real PyTorch and by loom (through the runner),
give the same per-step losses.

    /usr/bin/python3 differential.py export DIR               # real torch
    /usr/bin/python3 -m loom.run differential.py replay DIR   # loom as torch
    /usr/bin/python3 differential.py compare DIR [--rtol 1e-3]

`export` builds train.py's network from the data (whitening from the patch
covariance, dirac groups), saves its state and STEPS augmented batches
(random crop and flip; cutmix on every other batch, so some targets are
soft) as numpy files, then trains on them: train.py's optimizer, schedule,
loss and EMA (copied back into the net every ema_every steps), recording
each step's loss, the final parameters and an evaluation of the final net
(flip test-time augmentation). `replay` loads the state into a fresh network
and does the same steps. `compare` prints the loss table and fails (exit 1)
when a step's loss differs by more than rtol or the accuracies by more than
one point. Env as train.py: DATA, BS, WIDTH, STEPS (the steps trained),
SEED; SCHEDULE: the one-cycle schedule's length (default STEPS; longer: the
first STEPS steps of a longer run); EVAL: test images evaluated (256);
TORCH_MKLDNN=0: real torch convolves without oneDNN (its im2col GEMM, the
algorithm loom runs), whose kernels on CPUs with AVX-512 round differently;
ATEN_CPU_CAPABILITY=default: torch's portable kernels, not its AVX2/AVX-512
ones, which round differently again (torch reads it at import).
"""
import json
import os
import sys
import time

import numpy as np
import torch

if os.environ.get("TORCH_MKLDNN") == "0" and not torch.__version__.endswith("+loom"):
    torch.backends.mkldnn.enabled = False

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train  # noqa: E402  (env is read at import: set DATA, BS, WIDTH, STEPS first)


def make_batches(data, steps):
    train_x, train_y = data["train"]
    pad = train.HYP["pad"]
    padded = torch.nn.functional.pad(train_x, (pad, pad, pad, pad), mode="reflect")
    xs, ys = [], []
    while len(xs) < steps:
        images = train.random_flip(train.random_crop(padded, 32))
        for x, y in train.batches(images, train_y, train.BS, shuffle=True):
            if len(xs) % 2:
                x, y = train.cutmix(x, y, train.HYP["cutmix_size"])
            xs.append(x.numpy())
            ys.append(y.numpy())
            if len(xs) == steps:
                break
    return np.stack(xs), np.stack(ys)


def realize_seconds():
    """Under loom: its time inside realize so far (the rest of a step is Python and graph building)."""
    if not torch.__version__.endswith("+loom"):
        return 0.0
    import loom
    return loom.run_stats()["realize_seconds"]


def run(net, xs, ys, test):
    """Trains on the batches; returns per-step losses and times, the final state and its evaluation."""
    steps = len(xs)
    total = int(os.environ.get("SCHEDULE", steps))  # the first `steps` of a schedule this long
    opt, sched = train.make_optimizer(net, total)
    loss_fn = train.make_loss()
    losses, times, realize, ema = [], [], [], None
    for step in range(1, steps + 1):
        start, inside = time.perf_counter(), realize_seconds()
        loss, _ = train.train_step(net, opt, sched, loss_fn, torch.from_numpy(xs[step - 1]),
                                   torch.from_numpy(ys[step - 1]))
        losses.append(loss.item() / 512)
        ema = train.update_ema(ema, net, step, total)
        times.append(time.perf_counter() - start)
        realize.append(realize_seconds() - inside)
    val_loss, val_acc = train.evaluate(net, test, min(1000, test[0].shape[0]))
    state = {k: v.detach().float().numpy() for k, v in net.state_dict().items()}
    return {"losses": losses, "times": times, "realize": realize, "val_loss": val_loss, "val_acc": val_acc}, state


def export(folder):
    torch.manual_seed(train.SEED)
    data = train.load_data(train.DATA)
    net = train.Net(train.WIDTH)
    train.init_net(net, data["train"][0][: min(10000, data["train"][0].shape[0])])
    np.savez(os.path.join(folder, "init.npz"), **{k: v.numpy() for k, v in net.state_dict().items()})
    xs, ys = make_batches(data, train.STEPS)
    test_x, test_y = data["test"]
    n = int(os.environ.get("EVAL", "256"))
    np.savez(os.path.join(folder, "batches.npz"), xs=xs, ys=ys, test_x=test_x[:n].numpy(), test_y=test_y[:n].numpy())
    finish(folder, "torch", net)


def replay(folder):
    net = train.Net(train.WIDTH)
    init = np.load(os.path.join(folder, "init.npz"))
    net.load_state_dict({k: torch.from_numpy(init[k]) for k in init.files})
    finish(folder, "loom", net)


def finish(folder, side, net):
    b = np.load(os.path.join(folder, "batches.npz"))
    result, state = run(net, b["xs"], b["ys"], (torch.from_numpy(b["test_x"]), torch.from_numpy(b["test_y"])))
    np.savez(os.path.join(folder, f"{side}_state.npz"), **state)
    with open(os.path.join(folder, f"{side}.json"), "w") as f:
        json.dump(result, f)


def compare(folder, rtol):
    with open(os.path.join(folder, "torch.json")) as f:
        want = json.load(f)
    with open(os.path.join(folder, "loom.json")) as f:
        got = json.load(f)
    print("| step | torch loss | loom loss | rel. diff | torch ms | loom ms |")
    print("|---|---|---|---|---|---|")
    worst = 0.0
    for i, (t, l) in enumerate(zip(want["losses"], got["losses"])):
        rel = abs(l - t) / max(abs(t), 1e-12)
        worst = max(worst, rel)
        print(f"| {i + 1} | {t:.6f} | {l:.6f} | {rel:.1e} | {want['times'][i] * 1e3:.0f} | {got['times'][i] * 1e3:.0f} |")
    ws, gs = np.load(os.path.join(folder, "torch_state.npz")), np.load(os.path.join(folder, "loom_state.npz"))
    param_diff = max(float(np.max(np.abs(ws[k] - gs[k]) / (np.max(np.abs(ws[k])) + 1e-12))) for k in ws.files)
    print(f"worst loss rel. diff {worst:.2e}; final state max diff (relative to each tensor's max) {param_diff:.2e}")
    print(f"eval after training: torch loss {want['val_loss']:.6f} acc {want['val_acc']:.4f}; "
          f"loom loss {got['val_loss']:.6f} acc {got['val_acc']:.4f}")
    median = lambda v: sorted(v)[len(v) // 2] * 1e3
    t, l = median(want["times"][1:]), median(got["times"][1:])
    outside = median([a - b for a, b in zip(got["times"][1:], got["realize"][1:])])
    print(f"median step after the first: torch {t:.1f} ms, loom {l:.1f} ms (speed {t / l:.3f}x); "
          f"loom outside realize {outside:.1f} ms")
    same = len(got["losses"]) == len(want["losses"]) and worst <= rtol
    return same and abs(got["val_acc"] - want["val_acc"]) <= 0.01 + 1e-9


if __name__ == "__main__":
    mode, folder = sys.argv[1], sys.argv[2]
    if mode == "export":
        export(folder)
    elif mode == "replay":
        replay(folder)
    elif mode == "compare":
        rtol = float(sys.argv[sys.argv.index("--rtol") + 1]) if "--rtol" in sys.argv else 1e-3
        sys.exit(0 if compare(folder, rtol) else 1)
    else:
        sys.exit(f"unknown mode {mode!r}: export, replay or compare")
