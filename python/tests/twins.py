"""Twin modules: the same torch.nn layer built under real torch and under the shim with torch's
weights, run on the same inputs, their outputs and every gradient compared."""
import numpy as np
import torch

import loom.shim.torch as lt


def twins(name, *args, **kwargs):
    real = getattr(torch.nn, name)(*args, **kwargs)
    ours = getattr(lt.nn, name)(*args, **kwargs)
    assert [(n, tuple(p.shape)) for n, p in ours.named_parameters()] == \
        [(n, tuple(p.shape)) for n, p in real.named_parameters()]
    ours.load_state_dict({k: lt.from_numpy(v.detach().numpy().copy()) for k, v in real.state_dict().items()})
    return real, ours


def pair(array, grad=True):
    real = torch.from_numpy(array.copy()).requires_grad_(grad)
    ours = lt.from_numpy(array.copy()).requires_grad_(grad)
    return real, ours


def flat(out):
    """The tensors in a nest of tuples and lists (None left out)."""
    if out is None:
        return []
    return [t for o in out for t in flat(o)] if isinstance(out, (tuple, list)) else [out]


def close(got, want, what):
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=2e-5, atol=2e-6, err_msg=what)


def check(real, ours, inputs, rng):
    """Forward on both, then backward of one random projection of every output. inputs: one
    (torch's, the shim's) pair per positional argument."""
    want, got = real(*[i[0] for i in inputs]), ours(*[i[1] for i in inputs])
    want_f, got_f = flat(want), flat(got)
    assert [tuple(g.shape) for g in got_f] == [tuple(w.shape) for w in want_f]
    loss_t, loss_l = 0, 0
    for k, (g, w) in enumerate(zip(got_f, want_f)):
        close(g, w, f"output {k}")
        weights = rng.standard_normal(tuple(w.shape)).astype(np.float32)
        loss_t = loss_t + (w * torch.from_numpy(weights)).sum()
        loss_l = loss_l + (g * lt.from_numpy(weights.copy())).sum()
    loss_t.backward()
    loss_l.backward()
    for (name, p_l), (_, p_t) in zip(ours.named_parameters(), real.named_parameters()):
        close(p_l.grad, p_t.grad, f"grad of {name}")
    for k, (t_in, l_in) in enumerate(inputs):
        for a, b in zip(flat(l_in), flat(t_in)):
            if isinstance(b, torch.Tensor) and b.requires_grad:
                close(a.grad, b.grad, f"grad of input {k}")
