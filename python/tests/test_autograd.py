"""Gradients through the Python API against real torch."""
import numpy as np
import pytest
import torch

import loom
from conftest import assert_same, both


def test_backward_matches_torch(rng):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    w = rng.standard_normal((4, 2)).astype(np.float32)
    la, ta = both(a)
    lw, tw = both(w)
    lw.requires_grad_()
    tw.requires_grad_()
    ((la @ lw).tanh() ** 2).sum().backward()
    ((ta @ tw).tanh() ** 2).sum().backward()
    assert_same(lw.grad, tw.grad, rtol=1e-5, atol=1e-6)
    assert lw.is_leaf and lw.grad_fn is None
    assert (la @ lw).grad_fn is not None and lw.grad_fn is None


def test_autograd_backward_of_several_tensors_matches_torch(rng):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    w = rng.standard_normal((4,)).astype(np.float32)
    lx, tx = both(x)
    lw, tw = both(w)
    lw.requires_grad_()
    tw.requires_grad_()
    la, lb = (lx @ lw).tanh().sum(), (lx * lw).exp().mean(1)
    ta, tb = (tx @ tw).tanh().sum(), (tx * tw).exp().mean(1)
    gb = rng.standard_normal((3,)).astype(np.float32)
    loom.autograd.backward([la, lb], [loom.tensor(2.0), loom.from_numpy(gb)])
    torch.autograd.backward([ta, tb], [torch.tensor(2.0), torch.from_numpy(gb)])
    assert_same(lw.grad, tw.grad, rtol=1e-5, atol=1e-6)
    loom.autograd.backward((lx @ lw).sum())  # one tensor, no grad_tensors: adds to .grad
    torch.autograd.backward((tx @ tw).sum())
    assert_same(lw.grad, tw.grad, rtol=1e-5, atol=1e-6)
    with pytest.raises(RuntimeError, match="grad_tensors"):
        loom.autograd.backward([(lx @ lw).sum()], [loom.tensor(1.0), loom.tensor(1.0)])


def test_grad_accumulates_and_resets():
    x = loom.ones(3, requires_grad=True)
    tx = torch.ones(3, requires_grad=True)
    for _ in range(2):
        (x * 2).sum().backward()
        (tx * 2).sum().backward()
    assert_same(x.grad, tx.grad)
    x.grad = None
    assert x.grad is None


def test_no_grad_and_autograd_grad():
    x = loom.tensor([1.0, 2.0], requires_grad=True)
    with loom.no_grad():
        y = x * 3
    assert not y.requires_grad
    assert loom.is_grad_enabled()

    @loom.no_grad()
    def f(t):
        return t * 2
    assert not f(x).requires_grad
    (g,) = loom.autograd.grad((x ** 3).sum(), x)
    tx = torch.tensor([1.0, 2.0], requires_grad=True)
    (tg,) = torch.autograd.grad((tx ** 3).sum(), tx)
    assert_same(g, tg)
    assert x.grad is None


def test_in_place_on_leaf_requiring_grad_raises_like_torch():
    with pytest.raises(RuntimeError, match="leaf Variable"):
        torch.ones(2, requires_grad=True).add_(1)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        loom.ones(2, requires_grad=True).add_(1)


def test_nn_functional_matches_torch(rng):
    x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    lx, tx = both(x)
    lw, tw = both(w)
    F = torch.nn.functional
    assert_same(loom.nn.conv2d(lx, lw, padding=1), F.conv2d(tx, tw, padding=1), rtol=1e-4, atol=1e-4)
    assert_same(loom.nn.conv2d(lx, lw, stride=(2, 1), padding="valid"), F.conv2d(tx, tw, stride=(2, 1)),
                rtol=1e-4, atol=1e-4)
    assert_same(loom.nn.max_pool2d(lx, 2), F.max_pool2d(tx, 2))
    assert_same(loom.nn.avg_pool2d(lx, 3, stride=2, padding=1), F.avg_pool2d(tx, 3, stride=2, padding=1))
    logits = rng.standard_normal((5, 7)).astype(np.float32)
    target = np.array([0, 3, 6, 2, 2], dtype=np.int64)
    ll, tl = both(logits)
    lt, tt = both(target)
    assert_same(loom.nn.cross_entropy(ll, lt, label_smoothing=0.2), F.cross_entropy(tl, tt, label_smoothing=0.2),
                rtol=1e-5)
    assert_same(loom.nn.softmax(ll, -1), F.softmax(tl, -1), rtol=1e-5)
    rm, rv = loom.zeros(3), loom.ones(3)
    trm, trv = torch.zeros(3), torch.ones(3)
    assert_same(loom.nn.batch_norm(lx, rm, rv, training=True), F.batch_norm(tx, trm, trv, training=True),
                rtol=1e-4, atol=1e-5)
    assert_same(rm, trm, rtol=1e-5, atol=1e-6)
    assert_same(rv, trv, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_matches_torch(rng, uplo):
    x = rng.standard_normal((40, 6)).astype(np.float32)
    cov = np.cov(x.T).astype(np.float32)
    cov[np.triu_indices(6, 1) if uplo == "L" else np.tril_indices(6, -1)] = 7.0  # the unread triangle
    lc, tc = both(cov)
    got, want = loom.linalg.eigh(lc, UPLO=uplo), torch.linalg.eigh(tc, UPLO=uplo)
    assert_same(got.eigenvalues, want.eigenvalues, rtol=1e-5, atol=1e-5)
    # eigenvectors are defined up to sign: compare |v| and the reconstruction
    np.testing.assert_allclose(np.abs(got.eigenvectors.numpy()), np.abs(want.eigenvectors.numpy()), atol=1e-4)
    with pytest.raises(RuntimeError):
        torch.linalg.eigh(torch.ones(2, 3))
    with pytest.raises(RuntimeError):
        loom.linalg.eigh(loom.ones(2, 3))


def test_a_write_through_a_view_made_before_its_base_required_grad_raises_as_in_torch():
    for lib in (torch, loom):
        base = lib.zeros(2, 4)
        view = base[:, 1:3]
        base.add_(lib.ones(2, 4, requires_grad=True))  # base now requires grad; the view has no node yet
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            view.add_(lib.ones(2, 2))
        base = lib.zeros(2, 4)
        view = base[:, 1:3]
        base.add_(lib.ones(2, 4, requires_grad=True))
        assert view.grad_fn is not None  # asking for the node regenerates it: the write is fine then
        view.add_(lib.ones(2, 2))
        view.sum().backward()


def test_floor_divide_requires_grad_and_its_backward_raises_as_in_torch():
    for lib in (torch, loom):
        x = lib.tensor([3.5, -2.0, 7.0], requires_grad=True)
        for y in (lib.floor_divide(x, 2.0), x // 2, lib.floor_divide(x.detach(), x)):
            assert y.requires_grad and not y.is_leaf
            with pytest.raises(RuntimeError, match="derivative for aten::floor_divide is not implemented"):
                y.sum().backward()
        assert not lib.floor_divide(lib.tensor([7, 4]), 2).requires_grad
