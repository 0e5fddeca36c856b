"""The shim's added losses against real torch's: values for every reduction, gradients of the
input (and of the second input where there is one), modules' arguments, and torch's errors."""
import warnings

import numpy as np
import pytest
import torch

import loom.shim.torch as lt


def _inputs(rng, kind):
    x = rng.standard_normal((4, 5)).astype(np.float32)
    if kind == "prob":  # BCE: probabilities, targets in [0, 1]
        return [1 / (1 + np.exp(-x)), rng.random((4, 5)).astype(np.float32)]
    if kind == "kl":  # log-probabilities and probabilities with exact zeros
        t = rng.random((4, 5)).astype(np.float32)
        t[t < 0.3] = 0
        return [np.log(rng.random((4, 5)).astype(np.float32) + 0.1), t]
    if kind == "rank":
        return [x, rng.standard_normal((4, 5)).astype(np.float32), np.sign(rng.standard_normal((4, 5))).astype(np.float32)]
    if kind == "sign":
        return [x, np.sign(rng.standard_normal((4, 5))).astype(np.float32)]
    return [x, (x + rng.standard_normal((4, 5)) * 1.5).astype(np.float32)]


CASES = [
    ("BCELoss", "prob", {}), ("BCELoss", "prob", {"weight": np.linspace(0.5, 2, 5, dtype=np.float32)}),
    ("SmoothL1Loss", "pair", {}), ("SmoothL1Loss", "pair", {"beta": 0.5}), ("SmoothL1Loss", "pair", {"beta": 0.0}),
    ("HuberLoss", "pair", {}), ("HuberLoss", "pair", {"delta": 2.0}),
    ("KLDivLoss", "kl", {}), ("KLDivLoss", "kl", {"log_target": True}),
    ("MarginRankingLoss", "rank", {"margin": 0.3}), ("SoftMarginLoss", "sign", {}),
]


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("case", range(len(CASES)), ids=[f"{c[0]}{c[2] and '-' + '-'.join(c[2])}" for c in CASES])
def test_loss_matches_torch(case, reduction, rng):
    name, kind, kwargs = CASES[case]
    arrays = _inputs(rng, kind)
    if reduction == "mean" and name == "KLDivLoss":
        reduction = "batchmean"
    results = []
    for m in (torch, lt):
        args = {k: (m.from_numpy(v.copy()) if isinstance(v, np.ndarray) else v) for k, v in kwargs.items()}
        loss = getattr(m.nn, name)(reduction=reduction, **args)
        tensors = [m.from_numpy(a.copy()) for a in arrays]
        for t in tensors[:2 if kind == "rank" else 1]:
            t.requires_grad_()
        out = loss(*tensors)
        g = np.linspace(-1, 1, out.numel(), dtype=np.float32).reshape(tuple(out.shape))
        (out * m.from_numpy(g)).sum().backward()
        results.append([out.detach().numpy()] + [t.grad.numpy() for t in tensors if t.grad is not None])
    for got, want in zip(results[1], results[0]):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)


def test_loss_errors_as_torch():
    for m in (torch, lt):
        with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
            m.nn.functional.binary_cross_entropy(m.tensor([1.5]), m.tensor([1.0]))
        with pytest.raises(ValueError, match="Using a target size"):
            m.nn.functional.binary_cross_entropy(m.tensor([0.5, 0.5]), m.tensor([1.0]))
        with pytest.raises(RuntimeError, match="does not support negative values for beta"):
            m.nn.functional.smooth_l1_loss(m.ones(2), m.zeros(2), beta=-1.0)
        with pytest.raises(ValueError, match="is not a valid value for reduction"):
            m.nn.functional.huber_loss(m.ones(2), m.zeros(2), reduction="avg")
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            m.nn.functional.kl_div(m.zeros(2), m.ones(2) / 2)
        assert any("'batchmean' divides only by the batch size" in str(w.message) for w in seen)
