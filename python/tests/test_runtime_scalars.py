"""Runtime scalars (DESIGN 13): a Python number that reaches a kernel (an
optimizer's learning rate, an alpha=) is bound when the kernel launches, so a
training loop whose numbers change every step compiles its kernels once."""
import json
import os
import subprocess
import sys

import numpy as np
import torch

import loom
import loom.shim.torch as lt

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "hlb_cifar10")


def test_a_new_learning_rate_every_step_compiles_nothing_new():
    """The loop of an optimizer's update under a new lr every step: two
    kernels compile on the first steps, none after; every value equals
    torch's."""
    w0 = np.linspace(-1, 1, 1000, dtype=np.float32)
    g0 = np.linspace(2, 3, 1000, dtype=np.float32)
    w, g = lt.from_numpy(w0.copy()), lt.from_numpy(g0.copy())
    wt, gt = torch.from_numpy(w0.copy()), torch.from_numpy(g0.copy())
    compiled = []
    for lr in [0.1 * (i + 1) / 7 for i in range(8)]:
        before = loom.run_stats()["kernels_compiled"]
        w.add_(g, alpha=-lr)
        w.mul_(1 - lr * 5e-4)
        loom.realize_all([w])
        compiled.append(loom.run_stats()["kernels_compiled"] - before)
        wt.add_(gt, alpha=-lr)
        wt.mul_(1 - lr * 5e-4)
        np.testing.assert_array_equal(w.numpy(), wt.numpy())
    assert compiled[2:] == [0] * 6, compiled


STEPS = r"""
import json, os, sys
sys.path.insert(0, os.environ["EXAMPLE"])
import torch
import torch.nn.functional as F
import loom
import train  # the example's network, optimizer under OneCycleLR, loss and step, unmodified

torch.manual_seed(0)
net = train.Net(train.WIDTH)
images = torch.randn(64, 3, 16, 16)
targets = F.one_hot(torch.randint(0, 10, (64,)), 10).float()
steps = int(os.environ["STEPS"])
opt, sched = train.make_optimizer(net, steps)
loss_fn = train.make_loss()
cache = os.environ["LOOM_CACHE_DIR"]
log, step = [], 0
while step < steps:
    for x, y in train.batches(images, targets, train.BS, shuffle=True):
        before = loom.run_stats()
        loss, _ = train.train_step(net, opt, sched, loss_fn, x, y)
        value = loss.item()
        after = loom.run_stats()
        files = sum(len(f) for _, _, f in os.walk(cache))
        log.append([after["kernels_compiled"] - before["kernels_compiled"], files, value,
                    after["schedules"] - before["schedules"], after["schedule_hits"] - before["schedule_hits"],
                    after["host_reads"] - before["host_reads"], after["host_writes"] - before["host_writes"]])
        step += 1
        if step == steps:
            break
print(json.dumps(log))
"""


def test_hlb_recipe_under_one_cycle_compiles_nothing_after_step_two(tmp_path):
    """200 steps of the example's recipe (nesterov SGD, two param groups, a
    new learning rate every step) through the runner: no kernel compiles and
    the kernel disk cache gains no file after step 2."""
    script = tmp_path / "steps.py"
    script.write_text(STEPS)
    env = dict(os.environ, EXAMPLE=EXAMPLE, STEPS="200", BS="8", WIDTH="4", LOOM_CACHE_DIR=str(tmp_path / "cache"))
    run = subprocess.run([sys.executable, "-m", "loom.run", str(script)], env=env, capture_output=True, text=True,
                         timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    log = json.loads(run.stdout.strip().splitlines()[-1])
    assert len(log) == 200
    compiled = [entry[0] for entry in log]
    files = [entry[1] for entry in log]
    assert sum(compiled[:2]) > 0  # the cache started empty
    assert compiled[2:] == [0] * 198, compiled
    assert files[2:] == [files[1]] * 198, files
    assert all(np.isfinite(entry[2]) for entry in log)
    schedules = sum(entry[3] for entry in log[2:])
    hits = sum(entry[4] for entry in log[2:])
    print(f"schedule cache: {hits} of {schedules} realizes after step 2 hit")
    assert hits > 0
    # Two realizes a step: backward's (loss, gradients, running statistics) and the optimizer's;
    # loss.item() reads the loss backward() computed.
    assert [entry[3] for entry in log[2:]] == [2] * 198, [entry[3] for entry in log]
    # The only read on the host is loss.item() (on a GPU, each read waits for the work queued before it).
    # A step uploads nothing: max_pool2d's tie-break scores (short aranges) are computed in its kernels.
    assert [entry[5] for entry in log[2:]] == [1] * 198, [entry[5] for entry in log]
    assert [entry[6] for entry in log[2:]] == [0] * 198, [entry[6] for entry in log]
