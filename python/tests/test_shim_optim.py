"""The shim's torch.optim against real torch: the same weights and gradients
give the same parameters after every step, and the schedulers the same
learning-rate (and momentum) sequences."""
import math

import numpy as np
import pytest
import torch

import loom.shim.torch as lt


def _twin_params(rng, shapes):
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    real = [torch.nn.Parameter(torch.from_numpy(a.copy())) for a in arrays]
    ours = [lt.nn.Parameter(lt.from_numpy(a.copy())) for a in arrays]
    return real, ours


def _run_twins(rng, make, shapes=((4, 3), (3,), (2, 3, 3, 3)), steps=6):
    """Both optimizers step on the same gradients; the parameters must stay bit-identical."""
    real, ours = _twin_params(rng, shapes)
    opt_t, opt_l = make(torch, real), make(lt, ours)
    for _ in range(steps):
        for pt, pl in zip(real, ours):
            g = rng.standard_normal(tuple(pt.shape)).astype(np.float32)
            pt.grad = torch.from_numpy(g.copy())
            pl.grad = lt.from_numpy(g.copy())
        opt_t.step()
        opt_l.step()
        for pt, pl in zip(real, ours):
            np.testing.assert_array_equal(pl.detach().numpy(), pt.detach().numpy())
    return opt_t, opt_l


def _groups(t, params):
    return [{"params": params[:2], "weight_decay": 5e-4}, {"params": params[2:], "lr": 0.05, "weight_decay": 0}]


@pytest.mark.parametrize("kwargs", [
    dict(lr=0.1),
    dict(lr=0.1, momentum=0.9),
    dict(lr=0.1, momentum=0.85, nesterov=True, weight_decay=5e-4),
    dict(lr=0.2, momentum=0.9, dampening=0.1, weight_decay=1e-2),
    dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=5e-4, foreach=True),
    dict(lr=0.1, momentum=0.5, maximize=True),
])
def test_sgd_matches_torch_step_by_step(kwargs, rng):
    opt_t, opt_l = _run_twins(rng, lambda t, ps: t.optim.SGD(ps, **kwargs))
    buf_t = opt_t.state[next(iter(opt_t.state))].get("momentum_buffer") if opt_t.state else None
    if kwargs.get("momentum"):
        p_t, p_l = opt_t.param_groups[0]["params"][0], opt_l.param_groups[0]["params"][0]
        np.testing.assert_array_equal(opt_l.state[p_l]["momentum_buffer"].numpy(),
                                      opt_t.state[p_t]["momentum_buffer"].numpy())
    else:
        assert buf_t is None


def test_sgd_param_groups_match_torch(rng):
    make = lambda t, ps: t.optim.SGD(_groups(t, ps), lr=0.2, momentum=0.9, nesterov=True)  # noqa: E731
    opt_t, opt_l = _run_twins(rng, make)
    for gt, gl in zip(opt_t.param_groups, opt_l.param_groups):
        assert {k: v for k, v in gt.items() if k not in ("params", "foreach", "differentiable")} == \
            {k: v for k, v in gl.items() if k not in ("params", "foreach", "differentiable")}


@pytest.mark.parametrize("name,kwargs", [
    ("Adam", dict(lr=1e-2)),
    ("Adam", dict(lr=1e-2, weight_decay=1e-2, betas=(0.8, 0.99))),
    ("Adam", dict(lr=1e-2, amsgrad=True)),
    ("AdamW", dict(lr=1e-2)),
    ("AdamW", dict(lr=3e-3, weight_decay=0.1, eps=1e-6)),
])
def test_adam_matches_torch_step_by_step(name, kwargs, rng):
    opt_t, opt_l = _run_twins(rng, lambda t, ps: getattr(t.optim, name)(ps, **kwargs))
    p_t, p_l = opt_t.param_groups[0]["params"][0], opt_l.param_groups[0]["params"][0]
    for key in ("exp_avg", "exp_avg_sq"):
        np.testing.assert_array_equal(opt_l.state[p_l][key].numpy(), opt_t.state[p_t][key].numpy())
    assert opt_l.state[p_l]["step"].item() == opt_t.state[p_t]["step"].item()


@pytest.mark.parametrize("kwargs", [dict(), dict(lr=0.5, rho=0.8, eps=1e-5, weight_decay=1e-2), dict(maximize=True)])
def test_adadelta_matches_torch_step_by_step(kwargs, rng):
    opt_t, opt_l = _run_twins(rng, lambda t, ps: t.optim.Adadelta(ps, **kwargs))
    p_t, p_l = opt_t.param_groups[0]["params"][0], opt_l.param_groups[0]["params"][0]
    for key in ("square_avg", "acc_delta"):
        np.testing.assert_array_equal(opt_l.state[p_l][key].numpy(), opt_t.state[p_t][key].numpy())


def test_user_optimizer_subclass_with_state_and_groups(rng):
    def make(t, params):
        class SignSGD(t.optim.Optimizer):
            def __init__(self, params, lr=0.01):
                super().__init__(params, dict(lr=lr))

            @t.no_grad()
            def step(self):
                for group in self.param_groups:
                    for p in group["params"]:
                        st = self.state[p]
                        st["n"] = st.get("n", 0) + 1
                        p.add_(p.grad.sign() if hasattr(p.grad, "sign") else (p.grad > 0).float() * 2 - 1,
                               alpha=-group["lr"] * st["n"])
        return SignSGD(_groups(t, params), lr=0.03)
    opt_t, opt_l = _run_twins(rng, make, steps=3)
    assert [g["lr"] for g in opt_l.param_groups] == [0.03, 0.05]
    assert sorted(st["n"] for st in opt_l.state.values()) == sorted(st["n"] for st in opt_t.state.values())


def test_optimizer_rejects_what_torch_rejects():
    with pytest.raises(ValueError, match="empty parameter list"):
        lt.optim.SGD([], lr=0.1)
    p = lt.nn.Parameter(lt.zeros(2))
    with pytest.raises(ValueError, match="Nesterov"):
        lt.optim.SGD([p], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="required"):
        lt.optim.SGD([p])


def _lr_sequences(make, steps, optimizer="SGD", opt_kwargs=None):
    """lrs (and momenta) after construction and after each step, for torch and the shim."""
    out = []
    for t in (torch, lt):
        params = [t.nn.Parameter(t.zeros(2)), t.nn.Parameter(t.zeros(3))]
        groups = [{"params": params[:1]}, {"params": params[1:], "lr": 0.3}]
        opt = getattr(t.optim, optimizer)(groups, **(opt_kwargs or dict(lr=0.1, momentum=0.9)))
        sched = make(t, opt)
        seq = []
        for _ in range(steps):
            seq.append([(g["lr"], g.get("momentum"), g.get("betas")) for g in opt.param_groups])
            opt.step()
            sched.step()
        seq.append(list(sched.get_last_lr()))
        out.append(seq)
    return out


@pytest.mark.parametrize("kwargs", [
    dict(max_lr=0.4, total_steps=40),
    dict(max_lr=[0.4, 0.2], total_steps=40, pct_start=0.25, anneal_strategy="linear", cycle_momentum=False,
         div_factor=1e16, final_div_factor=0.07),
    dict(max_lr=0.4, epochs=3, steps_per_epoch=13, pct_start=0.23, anneal_strategy="linear", base_momentum=0.8,
         max_momentum=0.9),
    dict(max_lr=0.4, total_steps=37, three_phase=True, div_factor=10.0, final_div_factor=100.0),
])
def test_one_cycle_lr_matches_torch(kwargs):
    steps = kwargs.get("total_steps") or kwargs["epochs"] * kwargs["steps_per_epoch"]
    want, got = _lr_sequences(lambda t, opt: t.optim.lr_scheduler.OneCycleLR(opt, **kwargs), steps)
    assert got == want  # the same arithmetic in the same order: equal floats


def test_one_cycle_lr_cycles_adam_beta1_and_stops_where_torch_stops():
    make = lambda t, opt: t.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.01, total_steps=10)  # noqa: E731
    want, got = _lr_sequences(make, 10, "Adam", dict(lr=1e-3))
    assert got == want
    errors = []
    for t in (torch, lt):
        opt = t.optim.SGD([t.nn.Parameter(t.zeros(1))], lr=0.1)
        sched = t.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=2, cycle_momentum=False)
        with pytest.raises(ValueError) as e:
            for _ in range(5):
                opt.step()
                sched.step()
        errors.append(str(e.value))
    assert errors[1] == errors[0]


@pytest.mark.parametrize("make", [
    lambda t, opt: t.optim.lr_scheduler.LambdaLR(opt, lambda step: 1.0 / (1 + step) ** 0.5),
    lambda t, opt: t.optim.lr_scheduler.LambdaLR(opt, [lambda s: 0.9 ** s, lambda s: 1 - s / 30]),
    lambda t, opt: t.optim.lr_scheduler.StepLR(opt, step_size=4, gamma=0.5),
    lambda t, opt: t.optim.lr_scheduler.MultiStepLR(opt, milestones=[3, 7, 7], gamma=0.3),
    lambda t, opt: t.optim.lr_scheduler.ExponentialLR(opt, gamma=0.93),
    lambda t, opt: t.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=7),
    lambda t, opt: t.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=5, eta_min=0.01),
    lambda t, opt: t.optim.lr_scheduler.ConstantLR(opt, factor=0.4, total_iters=6),
    lambda t, opt: t.optim.lr_scheduler.LinearLR(opt, start_factor=0.2, end_factor=0.9, total_iters=9),
    lambda t, opt: t.optim.lr_scheduler.MultiplicativeLR(opt, lambda s: 0.97 if s % 3 else 0.8),
    lambda t, opt: t.optim.lr_scheduler.PolynomialLR(opt, total_iters=11, power=2.5),
    lambda t, opt: t.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=4, T_mult=2, eta_min=0.001),
    lambda t, opt: t.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=6),
    lambda t, opt: t.optim.lr_scheduler.SequentialLR(opt, [
        t.optim.lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=4),
        t.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9),
        t.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=6)], milestones=[5, 12]),
    lambda t, opt: t.optim.lr_scheduler.ChainedScheduler([
        t.optim.lr_scheduler.ConstantLR(opt, factor=0.5, total_iters=3),
        t.optim.lr_scheduler.ExponentialLR(opt, gamma=0.95)]),
], ids=["lambda", "lambda-per-group", "step", "multistep", "exponential", "cosine", "cosine-eta-min", "constant",
        "linear", "multiplicative", "polynomial", "warm-restarts-mult", "warm-restarts", "sequential", "chained"])
def test_schedulers_match_torch(make):
    want, got = _lr_sequences(make, 25)
    assert len(got) == 26
    assert got == want


def test_scheduler_state_dict_round_trip():
    opt = lt.optim.SGD([lt.nn.Parameter(lt.zeros(1))], lr=0.1, momentum=0.9)
    sched = lt.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=10)
    for _ in range(3):
        sched.step()
    state = sched.state_dict()
    opt2 = lt.optim.SGD([lt.nn.Parameter(lt.zeros(1))], lr=0.1, momentum=0.9)
    sched2 = lt.optim.lr_scheduler.OneCycleLR(opt2, max_lr=1.0, total_steps=10)
    sched2.load_state_dict(state)
    assert sched2.last_epoch == 3 and math.isclose(sched2.get_last_lr()[0], sched.get_last_lr()[0])


@pytest.mark.parametrize("name", ["SGD", "Adam", "Adadelta"])
def test_step_with_a_closure_returns_its_loss_as_torch(name):
    results = []
    for m in (torch, lt):
        w = m.nn.Parameter(m.from_numpy(np.array([1.0, -2.0, 0.5], np.float32)))
        opt = getattr(m.optim, name)([w], lr=0.1)

        def closure():
            opt.zero_grad()
            loss = (w * w).sum()
            loss.backward()
            return loss
        loss = opt.step(closure)
        results.append((float(loss), w.detach().numpy().copy()))
    assert results[1][0] == results[0][0]
    np.testing.assert_array_equal(results[1][1], results[0][1])


@pytest.mark.parametrize("kwargs", [dict(patience=2), dict(mode="max", factor=0.5, patience=1, cooldown=2),
                                    dict(threshold_mode="abs", threshold=0.05, min_lr=[0.02, 0.05], patience=0)])
def test_reduce_lr_on_plateau_matches_torch(kwargs):
    metrics = [1.0, 0.9, 0.91, 0.92, 0.95, 0.89, 0.88, 0.9, 0.9, 0.9, 0.87, 0.9, 0.95, 1.0, 0.5, 0.6, 0.7, 0.8]
    out = []
    for t in (torch, lt):
        params = [t.nn.Parameter(t.zeros(2)), t.nn.Parameter(t.zeros(2))]
        opt = t.optim.SGD([{"params": params[:1]}, {"params": params[1:], "lr": 0.3}], lr=0.1)
        sched = t.optim.lr_scheduler.ReduceLROnPlateau(opt, **kwargs)
        seq = []
        for m in metrics:
            sched.step(m if t is torch else m)
            seq.append([g["lr"] for g in opt.param_groups])
        out.append((seq, sched.best, sched.num_bad_epochs, sched.cooldown_counter))
    assert out[1] == out[0]
    for t in (torch, lt):
        opt = t.optim.SGD([t.nn.Parameter(t.zeros(1))], lr=0.1)
        with pytest.raises(ValueError, match="Factor should be < 1.0"):
            t.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=1.0)
        with pytest.raises(ValueError, match="mode avg is unknown"):
            t.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="avg")
