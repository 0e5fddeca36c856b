"""loom.jit: a training loop under the JIT gives bitwise the eager loop's
values; floats are inputs, other arguments are baked and guarded."""
import os
import subprocess
import sys

import numpy as np
import pytest

import loom


class Net:
    def __init__(self):
        loom.manual_seed(3)
        self.w1 = (loom.randn(16, 8) * 0.3).requires_grad_()
        self.w2 = (loom.randn(4, 16) * 0.3).requires_grad_()
        self.params = [self.w1, self.w2]
        self.momentum = [loom.zeros(*p.shape) for p in self.params]
        self.mean, self.var = loom.zeros(16), loom.ones(16)

    def step(self, x, y, lr):
        h = loom.nn.linear(x, self.w1)
        h = loom.nn.batch_norm(h, self.mean, self.var, training=True).relu()  # running stats: a side effect
        loss = loom.nn.cross_entropy(loom.nn.linear(h, self.w2), y, label_smoothing=0.1)
        grads = loom.autograd.grad([loss], self.params)
        with loom.no_grad():
            for p, m, g in zip(self.params, self.momentum, grads):
                m.mul_(0.9).add_(g)
                p.sub_(m * lr)
        return loss.detach()


def train(use_jit):
    net = Net()
    loom.manual_seed(11)
    xs = [loom.randn(8, 8) for _ in range(3)]
    ys = [loom.randint(0, 4, (8,)) for _ in range(3)]
    step = loom.jit(net.step) if use_jit else net.step
    losses = [step(xs[i % 3], ys[i % 3], 0.1 / (1 + i)).numpy() for i in range(12)]
    if use_jit:
        assert step.info["captured"]
    return losses, [t.numpy() for t in net.params + net.momentum + [net.mean, net.var]]


def test_training_loop_is_bitwise_the_eager_loop():
    eager_losses, eager_state = train(False)
    jit_losses, jit_state = train(True)
    for a, b in zip(eager_losses + eager_state, jit_losses + jit_state):
        assert a.tobytes() == b.tobytes()
    assert eager_losses[5].tobytes() != eager_losses[8].tobytes()


def test_replays_schedule_and_compile_nothing():
    f = loom.jit(lambda x, s: (x * s).sum())
    x = loom.ones(4)
    for i in range(2):
        f(x, 1.0 + i)
    loom.reset_run_stats()
    out = f(x, 5.0)
    stats = loom.run_stats()
    assert stats["schedules"] == 0 and stats["kernels_compiled"] == 0 and stats["kernels_run"] > 0
    assert out.item() == 20.0


def test_a_changed_baked_argument_raises_naming_it():
    f = loom.jit(lambda x, scale, mode="a": x * scale if mode == "a" else x)
    x = loom.ones(2)
    for _ in range(3):
        f(x, 2, mode="a")
    with pytest.raises(ValueError, match="argument 'mode' was 'a' when captured and is 'b' now"):
        f(x, 2, mode="b")
    with pytest.raises(ValueError, match="argument 1 was 2 when captured and is 3 now"):
        f(x, 3, mode="a")
    np.testing.assert_array_equal(f(x, 2, mode="a").numpy(), [2.0, 2.0])


def test_outputs_that_require_grad_raise():
    w = loom.ones(2).requires_grad_()
    f = loom.jit(lambda: w * 2)
    with pytest.raises(RuntimeError, match="requires grad"):
        f()


def test_loom_jit_zero_runs_eagerly():
    # Knobs are read once, at the first use: a process started with LOOM_JIT=0.
    code = ("import loom; f = loom.jit(lambda x: x + 1)\n"
            "for _ in range(4): f(loom.zeros(2))\n"
            "assert not loom._C.jit_enabled() and not f.info['captured'] and f.info['calls'] == 4, f.info\n")
    env = dict(os.environ, LOOM_JIT="0")
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
