"""The shim's torch.nn against real torch: parameter names and state_dict
keys, forward and backward on the same weights, state_dict round trips,
deepcopy, modes, dtype moves, hooks, containers and init."""
import copy
import math
import warnings

import numpy as np
import pytest
import torch

import loom.shim.torch as lt


def _net(t):
    class Block(t.nn.Module):
        def __init__(self, c_in, c_out):
            super().__init__()
            self.conv = t.nn.Conv2d(c_in, c_out, 3, padding=1, bias=False)
            self.pool = t.nn.MaxPool2d(2)
            self.norm = t.nn.BatchNorm2d(c_out, momentum=0.4)
            self.act = t.nn.GELU()

        def forward(self, x):
            return self.act(self.norm(self.pool(self.conv(x))))

    return t.nn.Sequential(
        Block(3, 8),
        t.nn.ModuleDict({"mid": t.nn.Conv2d(8, 8, 1), "skip": t.nn.Identity()}),
        t.nn.ModuleList([t.nn.ReLU(), t.nn.AdaptiveMaxPool2d((1, 1))]),
        t.nn.Flatten(),
        t.nn.Linear(8, 10),
    )


def _forward(t, net, x):
    h = net[0](x)
    h = net[1]["mid"](h) + net[1]["skip"](h)
    for m in net[2]:
        h = m(h)
    return net[4](net[3](h))


def _twins():
    real, ours = _net(torch), _net(lt)
    ours.load_state_dict({k: lt.from_numpy(v.numpy().copy()) for k, v in real.state_dict().items()})
    return real, ours


def _assert_state_equal(ours, real, **tol):
    sd_l, sd_t = ours.state_dict(), real.state_dict()
    assert list(sd_l) == list(sd_t)
    for k in sd_t:
        np.testing.assert_allclose(sd_l[k].numpy(), sd_t[k].numpy(), err_msg=k, **tol)


def test_names_and_state_dict_keys_match_torch():
    real, ours = _net(torch), _net(lt)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in real.named_parameters()]
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in real.named_buffers()]
    assert list(ours.state_dict()) == list(real.state_dict())
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in real.named_modules()]
    assert [type(m).__name__ for m in ours.children()] == [type(m).__name__ for m in real.children()]
    for name in ("GELU", "ReLU", "Flatten", "Identity"):
        assert repr(getattr(lt.nn, name)()) == repr(getattr(torch.nn, name)())
    assert repr(lt.nn.Softmax(dim=1)) == repr(torch.nn.Softmax(dim=1))
    assert [tuple(p.shape) for p in ours.parameters()] == [tuple(p.shape) for p in real.parameters()]
    assert all(isinstance(p, lt.nn.Parameter) and p.requires_grad for p in ours.parameters())


def test_training_step_matches_torch(rng):
    real, ours = _twins()
    x = rng.standard_normal((4, 3, 8, 8)).astype(np.float32)
    y = np.array([1, 7, 3, 0])
    for t, net in ((torch, real), (lt, ours)):
        out = _forward(t, net, t.from_numpy(x.copy()))
        loss = t.nn.CrossEntropyLoss(label_smoothing=0.2)(out, t.from_numpy(y.copy()))
        loss.backward()
        net.loss = loss.item()
    assert math.isclose(ours.loss, real.loss, rel_tol=1e-6)
    for (n, pt), (_, pl) in zip(real.named_parameters(), ours.named_parameters()):
        np.testing.assert_allclose(pl.grad.numpy(), pt.grad.numpy(), rtol=1e-4, atol=1e-6, err_msg=n)
    _assert_state_equal(ours, real, rtol=1e-5, atol=1e-6)  # running stats and num_batches_tracked


def test_eval_after_a_training_step_matches_torch(rng):
    real, ours = _twins()
    x = rng.standard_normal((4, 3, 8, 8)).astype(np.float32)
    for t, net in ((torch, real), (lt, ours)):
        _forward(t, net, t.from_numpy(x.copy())).sum().backward()
    _assert_state_equal(ours, real, rtol=1e-5, atol=1e-6)
    real.eval()
    ours.eval()
    assert not any(m.training for m in ours.modules())
    with torch.no_grad():
        want = _forward(torch, real, torch.from_numpy(x.copy())).numpy()
    np.testing.assert_allclose(_forward(lt, ours, lt.from_numpy(x.copy())).numpy(), want, rtol=1e-4, atol=1e-5)
    _assert_state_equal(ours, real, rtol=1e-5, atol=1e-6)


def test_state_dict_round_trip_and_strictness():
    real, ours = _twins()
    _assert_state_equal(ours, real)
    other = _net(lt)
    result = other.load_state_dict(ours.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    _assert_state_equal(other, real)
    sd = ours.state_dict()
    del sd["4.bias"]
    sd["extra"] = lt.zeros(1)
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "4.bias"') as e:
        other.load_state_dict(sd)
    assert '"extra"' in str(e.value)
    result = other.load_state_dict(sd, strict=False)
    assert result.missing_keys == ["4.bias"] and result.unexpected_keys == ["extra"]
    sd = ours.state_dict()
    sd["4.weight"] = lt.zeros(3, 3)
    with pytest.raises(RuntimeError, match="size mismatch for 4.weight"):
        other.load_state_dict(sd)


def test_state_dict_values_write_through_like_torch():
    """torch's state_dict tensors share storage: an EMA written into them updates the module."""
    real_a, real_b = torch.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    ours_a, ours_b = lt.nn.Linear(3, 2), lt.nn.Linear(3, 2)
    for real, ours in ((real_a, ours_a), (real_b, ours_b)):
        ours.load_state_dict({k: lt.from_numpy(v.numpy().copy()) for k, v in real.state_dict().items()})
    with torch.no_grad():
        for ema, p in zip(real_a.state_dict().values(), real_b.state_dict().values()):
            ema.lerp_(p, 0.25)
    with lt.no_grad():
        for ema, p in zip(ours_a.state_dict().values(), ours_b.state_dict().values()):
            ema.lerp_(p, 0.25)
    _assert_state_equal(ours_a, real_a, rtol=1e-6, atol=1e-7)
    assert not np.allclose(ours_a.state_dict()["weight"].numpy(), ours_b.state_dict()["weight"].numpy())


def test_deepcopy_is_independent():
    _, ours = _twins()
    clone = copy.deepcopy(ours)
    assert list(clone.state_dict()) == list(ours.state_dict())
    assert all(a is not b for a, b in zip(clone.parameters(), ours.parameters()))
    assert all(isinstance(p, lt.nn.Parameter) and p.requires_grad for p in clone.parameters())
    before = ours.state_dict()["4.weight"].numpy().copy()
    with lt.no_grad():
        for p in clone.parameters():
            p.mul_(0.0)
    np.testing.assert_array_equal(ours.state_dict()["4.weight"].numpy(), before)
    assert float(clone[4].weight.abs().sum().item()) == 0.0
    opt = lt.optim.SGD(clone.parameters(), lr=0.1)  # a copy is a fresh set of leaves an optimizer accepts
    assert len(opt.param_groups[0]["params"]) == len(list(ours.parameters()))


def test_dtype_moves_keep_parameter_identity():
    net = _net(lt)
    params = list(net.parameters())
    net.half()
    assert [p is q for p, q in zip(net.parameters(), params)] == [True] * len(params)
    assert {p.dtype for p in net.parameters()} == {lt.float16}
    assert net[0].norm.num_batches_tracked.dtype == lt.int64  # integer buffers stay as they are
    assert net[0].norm.running_mean.dtype == lt.float16
    net.float()
    assert {p.dtype for p in net.parameters()} == {lt.float32}
    assert all(p.requires_grad and p.is_leaf for p in net.parameters())
    net.to(lt.float64)
    assert {p.dtype for p in net.parameters()} == {lt.float64}


def test_cuda_runs_on_cpu_after_one_warning(monkeypatch):
    import loom.devices
    monkeypatch.setattr(loom.devices, "_warned", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        net = lt.nn.Linear(2, 2).to("cuda")
        x = lt.ones(3, 2).to(lt.device("cuda:0"), non_blocking=True).cuda()
        y = net(x)
        z = lt.zeros(2, device="cuda")
    assert len([w for w in caught if "CUDA" in str(w.message)]) == 1
    assert tuple(y.shape) == (3, 2) and str(x.device) == "cpu" and tuple(z.shape) == (2,)
    assert lt.device("cuda", 0) == lt.device("cuda:0") and repr(lt.device("cpu")) == repr(torch.device("cpu"))
    assert repr(lt.device("cuda:1")) == repr(torch.device("cuda:1"))


def test_forward_hooks_and_apply():
    for t in (torch, lt):
        net = t.nn.Sequential(t.nn.Linear(2, 3), t.nn.ReLU())
        seen = []
        handle = net[0].register_forward_hook(lambda m, inp, out: seen.append((type(m).__name__, len(inp))))
        net(t.ones(1, 2))
        handle.remove()
        net(t.ones(1, 2))
        assert seen == [("Linear", 1)]
        doubled = net[0].register_forward_hook(lambda m, inp, out: out * 2)
        assert tuple(net[0](t.ones(1, 2)).shape) == (1, 3)
        doubled.remove()
        names = []
        net.apply(lambda m: names.append(type(m).__name__))
        assert names == ["Linear", "ReLU", "Sequential"]


def test_module_attribute_rules_match_torch():
    for t in (torch, lt):
        m = t.nn.Linear(2, 2)
        with pytest.raises(TypeError):
            m.weight = t.zeros(2, 2)  # a plain tensor cannot replace a parameter
        m.weight = t.nn.Parameter(t.zeros(2, 2))
        assert float(m.weight.sum().item()) == 0.0
        m.register_buffer("scale", t.ones(1))
        m.register_buffer("tmp", t.ones(1), persistent=False)
        assert "scale" in m.state_dict() and "tmp" not in m.state_dict()
        with pytest.raises(AttributeError):
            m.nothing_here
        assert m.zero_grad() is None


def test_subclassing_layers():
    class Conv(lt.nn.Conv2d):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.kernel_size = (3, 3)

        def forward(self, x):
            return super().forward(x) * 2

    class BN(lt.nn.BatchNorm2d):
        def __init__(self, c, weight=False):
            super().__init__(c, eps=1e-12, momentum=0.6)
            self.weight.data.fill_(1.0)
            self.weight.requires_grad = weight

    net = lt.nn.Sequential(Conv(3, 4, 3, padding="same", bias=False), BN(4))
    out = net(lt.randn(2, 3, 5, 5))
    assert tuple(out.shape) == (2, 4, 5, 5)
    out.sum().backward()
    assert net[1].weight.grad is None and net[0].weight.grad is not None


def test_init_functions_match_torch_rules():
    w_t, w_l = torch.empty(12, 4, 3, 3), lt.empty(12, 4, 3, 3)
    torch.nn.init.dirac_(w_t, groups=3)
    lt.nn.init.dirac_(w_l, groups=3)
    np.testing.assert_array_equal(w_l.numpy(), w_t.numpy())
    p = lt.nn.Parameter(lt.empty(256, 128))
    for name, args, bound in (("kaiming_uniform_", {"a": math.sqrt(5)}, 1 / math.sqrt(128)),
                              ("xavier_uniform_", {}, math.sqrt(6 / (256 + 128))),
                              ("uniform_", {"a": -0.5, "b": 0.5}, 0.5)):
        out = getattr(lt.nn.init, name)(p, **args)
        assert out is p and p.requires_grad and p.is_leaf
        v = p.detach().numpy()
        assert v.min() >= -bound and v.max() <= bound and v.max() > 0.95 * bound and v.min() < -0.95 * bound
    lt.nn.init.kaiming_normal_(p, mode="fan_out", nonlinearity="relu")
    assert abs(p.detach().numpy().std() - math.sqrt(2 / 256)) < 0.02 * math.sqrt(2 / 256) * 5
    lt.nn.init.zeros_(p)
    assert p.detach().numpy().max() == 0
    lt.nn.init.ones_(p)
    assert p.detach().numpy().min() == 1
    for nl, param in (("relu", None), ("leaky_relu", 0.2), ("tanh", None), ("linear", None), ("selu", None)):
        assert lt.nn.init.calculate_gain(nl, param) == torch.nn.init.calculate_gain(nl, param)
    with pytest.raises(ValueError, match="Fan in and fan out"):
        lt.nn.init.xavier_uniform_(lt.empty(3))


@pytest.mark.parametrize("size,out", [((7, 9), (3, 4)), ((8, 8), (2, 4)), ((5, 6), (1, None))])
def test_adaptive_pools_match_torch(size, out, rng):
    x = rng.standard_normal((2, 3) + size).astype(np.float32)
    for name in ("AdaptiveMaxPool2d", "AdaptiveAvgPool2d"):
        want = getattr(torch.nn, name)(out)(torch.from_numpy(x.copy())).numpy()
        got = getattr(lt.nn, name)(out)(lt.from_numpy(x.copy())).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=name)
