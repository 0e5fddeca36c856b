"""torch.compile on the shim: a training step under loom's JIT replays its
capture and trains as the eager step does (and as real torch does); a
module's forward that autograd needs runs eagerly; an evaluation under
no_grad is captured, reads the parameters as they are at each call, and a
new input shape or mode gets a capture of its own."""
import math

import numpy as np
import pytest
import torch

import loom
import loom.shim.torch as lt


def _net(framework, weights):
    nn = framework.nn
    net = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.GELU(), nn.Linear(8, 3))
    net.load_state_dict({k: framework.from_numpy(v.copy()) for k, v in weights.items()})
    return net


def _weights(seed=0):
    torch.manual_seed(seed)
    ref = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.BatchNorm1d(8), torch.nn.GELU(), torch.nn.Linear(8, 3))
    return {k: v.detach().numpy().copy() for k, v in ref.state_dict().items()}


def _batches(rng, n=8, batch=16):
    return [(rng.standard_normal((batch, 6)).astype(np.float32), rng.integers(0, 3, batch)) for _ in range(n)]


def _train(framework, weights, batches, compiled, lr_drop_at=None):
    net = _net(framework, weights)
    opt = framework.optim.SGD(net.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3)
    loss_fn = framework.nn.CrossEntropyLoss(label_smoothing=0.1)

    def step(x, y):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()
        return loss.detach()

    run = lt.compile(step) if compiled else step
    losses = []
    for i, (x, y) in enumerate(batches):
        if i == lr_drop_at:
            opt.param_groups[0]["lr"] = 0.01  # as StepLR does
        losses.append(float(run(framework.from_numpy(x), framework.from_numpy(y)).item()))
    return losses, net, run


def test_a_compiled_training_step_replays_and_trains_as_the_eager_step(rng):
    weights, batches = _weights(), _batches(rng)
    eager, eager_net, _ = _train(lt, weights, batches, compiled=False)
    loom.reset_run_stats()
    got, net, run = _train(lt, weights, batches, compiled=True)
    assert run._compiled.captures == 1
    assert got == eager  # bitwise: the replay runs the eager step's kernels
    for (name, a), (_, b) in zip(eager_net.state_dict().items(), net.state_dict().items()):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)
    want, _, _ = _train(torch, weights, batches, compiled=False)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    # A replay schedules and compiles nothing.
    x, y = (lt.from_numpy(a).realize() for a in batches[0])
    loom.reset_run_stats()
    run(x, y)
    stats = loom.run_stats()
    assert stats["schedules"] == 0 and stats["kernels_compiled"] == 0 and stats["kernels_run"] > 0


def test_a_changed_learning_rate_is_captured_again(rng):
    weights, batches = _weights(), _batches(rng, n=12)
    eager, _, _ = _train(lt, weights, batches, compiled=False, lr_drop_at=6)
    got, _, run = _train(lt, weights, batches, compiled=True, lr_drop_at=6)
    assert got == eager
    assert run._compiled._made == 2


@pytest.mark.parametrize("seed", range(4))
def test_a_compiled_module_runs_autograd_eagerly_and_captures_evaluation(rng, seed):
    weights = _weights(seed)
    net = _net(lt, weights)
    ref = _net(torch, weights)
    model = lt.compile(net)
    assert isinstance(model, lt.nn.Module) and model._orig_mod is net
    assert [n for n, _ in model.named_parameters()] == ["_orig_mod." + n for n, _ in net.named_parameters()]
    x = rng.standard_normal((16, 6)).astype(np.float32)
    for _ in range(3):  # training under autograd: the outputs require grad, so eagerly
        out = model(lt.from_numpy(x))
        ref_out = ref(torch.from_numpy(x))  # (each call updates BatchNorm's running statistics)
        assert out.requires_grad
    out.square().sum().backward()
    ref_out.square().sum().backward()
    np.testing.assert_allclose(net[0].weight.grad.numpy(), ref[0].weight.grad.numpy(), rtol=1e-4, atol=1e-5)
    assert model._compiled.captures == 0

    model.eval()
    ref.eval()
    with lt.no_grad():
        for step in range(6):  # change the weights between evaluations: in place, or a new tensor bound
            if step % 2:
                w = rng.standard_normal((3, 8)).astype(np.float32)
                ref[3].weight.data = torch.from_numpy(w.copy())
                net[3].weight.data = lt.from_numpy(w.copy())
            else:
                with torch.no_grad():
                    ref[3].weight.mul_(0.5 + step)
                net[3].weight.data.mul_(0.5 + step)
            got = model(lt.from_numpy(x)).numpy()
            np.testing.assert_allclose(got, ref(torch.from_numpy(x)).detach().numpy(), rtol=1e-4, atol=1e-5)
        assert model._compiled.captures == 1
        small = x[:5]  # another shape: its own capture
        for _ in range(3):
            got = model(lt.from_numpy(small)).numpy()
        np.testing.assert_allclose(got, ref(torch.from_numpy(small)).detach().numpy(), rtol=1e-4, atol=1e-5)
        assert model._compiled.captures == 2
    model.train()
    assert net.training and model(lt.from_numpy(x)).requires_grad


def test_compile_takes_torchs_arguments_and_returns_other_values_eagerly():
    f = lt.compile(mode="max-autotune", fullgraph=True)(math.sin)
    assert [f(0.5) for _ in range(3)] == [math.sin(0.5)] * 3
    assert f._compiled.captures == 0
    g = lt.compile(lambda t, k: t * k, backend="inductor")
    for k in (2, 3, 2, 3, 2):
        np.testing.assert_array_equal(g(lt.ones(2), k).numpy(), [k, k])
    assert g._compiled.captures == 2  # one per value of the int, as torch recompiles per guard
