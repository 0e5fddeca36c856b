"""The loom package against real torch: creation, dtypes, operators, reductions,
movement, numpy round trips and printing."""
import numpy as np
import pytest
import torch

import loom
from conftest import DTYPES, assert_same, both


def test_creation_matches_torch():
    assert_same(loom.zeros(2, 3), torch.zeros(2, 3))
    assert_same(loom.ones((2, 3), dtype=loom.int32), torch.ones((2, 3), dtype=torch.int32))
    assert_same(loom.full([4], 2.5), torch.full([4], 2.5))
    assert_same(loom.full([4], 7), torch.full([4], 7))
    assert_same(loom.arange(5), torch.arange(5))
    assert_same(loom.arange(0, 1, 0.25), torch.arange(0, 1, 0.25))
    assert_same(loom.tensor([1.5, 2.0]), torch.tensor([1.5, 2.0]))
    assert_same(loom.tensor([[1, 2], [3, 4]]), torch.tensor([[1, 2], [3, 4]]))
    assert_same(loom.tensor([True, False]), torch.tensor([True, False]))
    assert_same(loom.tensor(np.arange(6.0).reshape(2, 3)), torch.tensor(np.arange(6.0).reshape(2, 3)))
    assert_same(loom.zeros_like(loom.ones(3, dtype=loom.int8)), torch.zeros_like(torch.ones(3, dtype=torch.int8)))


@pytest.mark.parametrize("name", sorted(DTYPES))
def test_numpy_round_trip_every_dtype(name, rng):
    ldt, tdt = DTYPES[name]
    a = (rng.standard_normal((3, 4)) * 10).astype(torch.empty(0, dtype=tdt).numpy().dtype)
    t = loom.from_numpy(a)
    assert t.dtype == ldt
    np.testing.assert_array_equal(t.numpy(), a)
    # strided and negative-stride arrays are read as numpy reads them
    np.testing.assert_array_equal(loom.from_numpy(a[:, ::-2]).numpy(), a[:, ::-2])
    np.testing.assert_array_equal(loom.from_numpy(a.T).numpy(), a.T)


def test_bfloat16_has_no_numpy_dtype_as_in_torch():
    with pytest.raises(TypeError):
        torch.ones(2, dtype=torch.bfloat16).numpy()
    with pytest.raises(TypeError):
        loom.ones(2, dtype=loom.bfloat16).numpy()
    assert "bfloat16" in repr(loom.ones(2, dtype=loom.bfloat16))


def test_operators_and_scalar_promotion(rng):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((4,)).astype(np.float32)
    la, ta = both(a)
    lb, tb = both(b)
    assert_same(la + lb, ta + tb)
    assert_same(la - 2, ta - 2)
    assert_same(2 - la, 2 - ta)
    assert_same(la * lb / 3, ta * tb / 3)
    assert_same(1 / (la.abs() + 1), 1 / (ta.abs() + 1))
    assert_same(la ** 2, ta ** 2)
    assert_same(2 ** la, 2 ** ta, rtol=1e-5)
    assert_same(-la, -ta)
    assert_same(la @ la.T, ta @ ta.T, rtol=1e-5, atol=1e-5)
    assert_same(la > 0, ta > 0)
    assert_same(la == lb, ta == tb)
    i, ti = both(np.arange(-6, 6, dtype=np.int32))
    assert_same(i + 2, ti + 2)  # a Python int keeps int32
    assert_same(i + 2.5, ti + 2.5)  # a Python float lifts to the default float
    assert_same(i // 4, ti // 4)
    assert_same(i % 4, ti % 4)
    assert_same(7 // (i.abs() + 1), 7 // (ti.abs() + 1))
    assert_same(i / 4, ti / 4)
    assert_same(i & 3, ti & 3)
    assert_same(~i, ~ti)
    assert_same(i << 2, ti << 2)


def test_unary_and_reductions(rng):
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)
    la, ta = both(a)
    for name in ("exp", "tanh", "sigmoid", "relu", "sin", "cos", "erf", "abs"):
        assert_same(getattr(la, name)(), getattr(ta, name)(), rtol=1e-5, atol=1e-6)
    assert_same(la.sum(), ta.sum(), rtol=1e-5)
    assert_same(la.sum(dim=1), ta.sum(dim=1), rtol=1e-5)
    assert_same(la.mean((0, 2), keepdim=True), ta.mean((0, 2), keepdim=True), rtol=1e-5)
    assert_same(la.amax(-1), ta.amax(-1))
    assert_same(la.max(), ta.max())
    assert_same(la.max(dim=1), ta.max(dim=1))
    assert_same(la.max(1).indices, ta.max(1).indices)
    assert_same(la.argmin(), ta.argmin())
    assert_same(la.var(dim=2), ta.var(dim=2), rtol=1e-5)
    assert_same(la.cumsum(1), ta.cumsum(1), rtol=1e-5)
    assert_same(la.sort(dim=2, descending=True), ta.sort(dim=2, descending=True))
    assert_same(loom.sum(la, 0), torch.sum(ta, 0), rtol=1e-5)
    assert_same(loom.exp(la), torch.exp(ta), rtol=1e-6)


def test_movement_and_views(rng):
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)
    la, ta = both(a)
    assert_same(la.permute(2, 0, 1), ta.permute(2, 0, 1))
    assert_same(la.reshape(6, -1), ta.reshape(6, -1))
    assert_same(la.view(4, 6), ta.view(4, 6))
    assert_same(la.transpose(0, 2).flatten(), ta.transpose(0, 2).flatten())
    assert_same(la.unsqueeze(1).expand(2, 5, 3, 4), ta.unsqueeze(1).expand(2, 5, 3, 4))
    assert_same(la.flip([0, 2]), ta.flip([0, 2]))
    assert_same(la.split(2, dim=2), ta.split(2, dim=2))
    assert_same(la.unfold(2, 2, 1), ta.unfold(2, 2, 1))
    assert_same(loom.cat([la, la], 1), torch.cat([ta, ta], 1))
    assert_same(loom.stack([la, la]), torch.stack([ta, ta]))


def test_indexing_reads_like_torch(rng):
    a = rng.standard_normal((4, 5, 6)).astype(np.float32)
    la, ta = both(a)
    for idx in [1, -1, (1, 2), (slice(1, None), None, 2), (Ellipsis, 3), (slice(None), slice(None, None, 2)),
                (None, Ellipsis, None), (slice(-3, -1), 0, slice(4, 1))]:
        assert_same(la[idx], ta[idx])
    perm = np.array([3, 0, 2], dtype=np.int64)
    assert_same(la[loom.from_numpy(perm)], ta[torch.from_numpy(perm)])
    assert_same(la[:, [4, 0]], ta[:, [4, 0]])
    mask = a[:, 0, 0] > 0
    assert_same(la[loom.from_numpy(mask)], ta[torch.from_numpy(mask)])


def test_bad_indices_raise_torch_exception_types():
    x, tx = loom.zeros(3, 4), torch.zeros(3, 4)
    for idx, exc in [(3, IndexError), ((0, 0, 0), IndexError), (1.5, IndexError)]:
        with pytest.raises(exc):
            tx[idx]
        with pytest.raises(exc):
            x[idx]
    with pytest.raises(ValueError):
        tx[::-1]
    with pytest.raises(ValueError):
        x[::-1]


def test_writes_through_views_reach_the_base(rng):
    a = rng.standard_normal((4, 5)).astype(np.float32)
    la, ta = both(a)
    la[1] = 7.0
    ta[1] = 7.0
    la[:, 2:4] = loom.ones(4, 2)
    ta[:, 2:4] = torch.ones(4, 2)
    v, tv = la[2:], ta[2:]
    v.mul_(2)
    tv.mul_(2)
    assert_same(la, ta)
    assert_same(v, tv)
    la[la > 1] = 0.5
    ta[ta > 1] = 0.5
    assert_same(la, ta)
    la += 1
    ta += 1
    assert_same(la, ta)
    c, tc = la.clone(), ta.clone()
    la.zero_()
    ta.zero_()
    assert_same(c, tc)
    assert_same(la, ta)


def test_items_and_conversions():
    assert loom.tensor(3).item() == 3 and isinstance(loom.tensor(3).item(), int)
    assert loom.tensor(2.5).item() == 2.5
    assert loom.tensor(True).item() is True
    assert loom.arange(4).tolist() == [0, 1, 2, 3]
    assert float(loom.tensor([1.5])) == 1.5
    assert int(loom.tensor(7)) == 7
    assert_same(loom.arange(4).float(), torch.arange(4).float())
    assert_same(loom.arange(4).to(loom.float16), torch.arange(4).to(torch.float16))
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(loom.ones(2))
    with pytest.raises(ValueError):
        loom.ones(2).item()
    assert repr(loom.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert repr(loom.tensor([1, 2], dtype=loom.int32)) == "tensor([1, 2], dtype=loom.int32)"


def test_shape_errors_are_runtime_errors_like_torch():
    with pytest.raises(RuntimeError):
        torch.ones(2, 3) + torch.ones(4)
    with pytest.raises(RuntimeError):
        loom.ones(2, 3) + loom.ones(4)
    with pytest.raises(RuntimeError):
        loom.ones(2, 3) @ loom.ones(2, 3)
    with pytest.raises(IndexError):
        loom.ones(2, 3).sum(dim=5)
    with pytest.raises(TypeError):
        loom.ones(2) + "a"


def test_counters():
    loom.reset_run_stats()
    (loom.ones(8) * 3).realize()
    stats = loom.run_stats()
    assert stats["kernels_run"] >= 1
    assert stats["realize_seconds"] > 0
    assert set(loom.memory_stats()) == {"live_buffers", "live_bytes", "peak_bytes"}
    loom.reset_peak_memory()
    assert loom.memory_stats()["peak_bytes"] == loom.memory_stats()["live_bytes"]


def test_in_place_ops_refuse_operands_partly_sharing_the_written_memory_as_torch():
    for lib in (torch, loom):
        x = lib.zeros(3)
        with pytest.raises(RuntimeError, match="refer to a single memory location"):
            x.add_(x[:1].reshape([]))
        m = lib.zeros(4, dtype=lib.bool)
        with pytest.raises(RuntimeError, match="refer to a single memory location"):
            m[1:].masked_fill_(m[:3], True)
        x.add_(x)  # the same elements with the same strides: fine in both
        x[1:].mul_(x[:2].clone())
