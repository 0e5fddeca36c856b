"""loom.schedule: the kernels a realize would run, shown before anything runs."""
import numpy as np
import pytest

import loom


def test_a_fused_chain_is_one_kernel_and_nothing_runs():
    x = loom.arange(8, dtype=loom.float32).realize()
    y = (x * 2.0 + 1.0).exp()
    loom.reset_run_stats()
    ks = loom.schedule(y)
    assert [k.name for k in ks] == ["E_8"]
    k = ks[0]
    assert "EXP" in k.ast and "exp" in k.c_source and "__global__" in k.cuda_source
    assert len(k.buffers) == 2 and k.buffers[0].endswith("[8] float32")
    assert "v0=2 float32" in k.bound  # the 2.0 is bound at launch, not baked into the source
    assert repr(k).startswith("<kernel E_8 (buf")
    stats = loom.run_stats()
    assert (stats["kernels_run"], stats["kernels_compiled"], stats["buffers_allocated"]) == (0, 0, 0)
    np.testing.assert_allclose(y.numpy(), np.exp(np.arange(8) * 2.0 + 1.0), rtol=1e-6)


def test_a_training_step_runs_exactly_the_kernels_shown():
    """A linear layer's step: gradients and an in-place update still pending.
    realize_all runs as many kernels as schedule listed, in one schedule."""
    loom.manual_seed(0)
    w = loom.randn(16, 8).realize().requires_grad_()
    x, t = loom.randn(4, 8).realize(), loom.randn(4, 16).realize()
    loss = ((x @ w.T - t) ** 2).mean()
    loss.backward()
    with loom.no_grad():
        w.sub_(w.grad * 0.1)
    shown = loom.schedule(loss)
    assert shown, "the update and the loss are still to compute"
    loom.reset_run_stats()
    loom.realize_all([loss])
    assert loom.run_stats()["kernels_run"] == len(shown)
    assert loom.schedule(loss) == [] and loom.schedule() == []  # computed now, no update pending


def test_arguments_are_tensors():
    with pytest.raises(TypeError, match=r"schedule\(\): argument 1 must be a Tensor, not float"):
        loom.schedule(loom.ones(2), 3.0)
    assert loom.schedule([loom.ones(2) * 3.0])[0].name == "E_2"  # a list works too
