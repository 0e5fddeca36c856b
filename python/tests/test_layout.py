"""Strides, storage offsets, contiguity and memory formats, each compared with
real torch on the same views."""
import numpy as np
import pytest
import torch

import loom
from conftest import assert_same, both

VIEWS = {
    "plain": lambda x, m: x,
    "permute": lambda x, m: x.permute(0, 2, 3, 1),
    "step_slice": lambda x, m: x[1:, :, 1::2],
    "negative_index": lambda x, m: x[-1, :, -2:],
    "expand": lambda x, m: x[:, :1].expand(2, 3, 4, 5),
    "channels_last": lambda x, m: x.contiguous(memory_format=m.channels_last),
    "to_channels_last": lambda x, m: x.to(memory_format=m.channels_last),
    "channels_last_then_slice": lambda x, m: x.to(memory_format=m.channels_last)[:, 1:, ::2],
    "flip": lambda x, m: x.flip(1),
    "t": lambda x, m: x[0, 0].t(),
    "T_of_2d": lambda x, m: x[1, 2].T,
    "unsqueeze": lambda x, m: x[:, None],
    "select": lambda x, m: x[1],
    "transpose_contiguous": lambda x, m: x.transpose(1, 2).contiguous(),
    "reshape_view": lambda x, m: x.reshape(6, 20),
    "reshape_copy": lambda x, m: x.permute(0, 2, 3, 1).reshape(-1, 3),
    "size1_slice": lambda x, m: x[:, 1:2],
    "empty": lambda x, m: x[:, :0],
    "split": lambda x, m: x.split(2, dim=2)[1],
    "unfold": lambda x, m: x.unfold(3, 2, 1),
    "as_strided": lambda x, m: x.as_strided((3, 4), (7, 2), 5),
    "view_of_channels_last": lambda x, m: x.to(memory_format=m.channels_last).permute(0, 2, 3, 1).view(2, 20, 3),
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_strides_offset_and_contiguity_match_torch(name):
    a = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    lx, tx = both(a)
    got, want = VIEWS[name](lx, loom), VIEWS[name](tx, torch)
    assert got.stride() == want.stride()
    assert got.storage_offset() == want.storage_offset()
    assert got.is_contiguous() == want.is_contiguous()
    if got.ndim == 4:
        assert got.is_contiguous(memory_format=loom.channels_last) == \
            want.is_contiguous(memory_format=torch.channels_last)
    for d in range(-got.ndim, got.ndim):
        assert got.stride(d) == want.stride(d)
    # as_strided over it addresses the storage torch addresses
    if got.numel() >= 4:
        assert_same(got.as_strided((2, 2), (1, 2)), want.as_strided((2, 2), (1, 2)))
    assert_same(got, want)


def test_stride_of_a_bad_dim_raises_index_error_as_torch():
    for make in (lambda m: m.zeros(2, 3), lambda m: m.tensor(1.0)):
        for dim in (2, -3, 5):
            with pytest.raises(IndexError) as want:
                make(torch).stride(dim)
            with pytest.raises(IndexError) as got:
                make(loom).stride(dim)
            assert str(got.value) == str(want.value)


def test_channels_last_needs_rank_4():
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        torch.zeros(2, 3, 4).to(memory_format=torch.channels_last)
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        loom.zeros(2, 3, 4).to(memory_format=loom.channels_last)


def test_empty_strided_has_the_strides_asked_for():
    for size, stride in (((2, 3), (1, 2)), ((4, 1, 3), (3, 7, 1)), ((2, 0), (5, 1)), ((), ())):
        got, want = loom.empty_strided(size, stride), torch.empty_strided(size, stride)
        assert (tuple(got.shape), got.stride(), got.storage_offset()) == \
            (tuple(want.shape), want.stride(), want.storage_offset())


def test_writes_through_a_channels_last_copy_stay_in_it():
    a = np.arange(2 * 3 * 2 * 2, dtype=np.float32).reshape(2, 3, 2, 2)
    lx, tx = both(a)
    lc, tc = lx.contiguous(memory_format=loom.channels_last), tx.contiguous(memory_format=torch.channels_last)
    lc[:, 1].mul_(10)
    tc[:, 1].mul_(10)
    assert_same(lc, tc)
    assert_same(lx, tx)  # the original is a different storage


def test_module_to_channels_last_changes_4d_parameters_only_and_computes_the_same():
    import loom.shim.torch as lt
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    tm = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.Flatten(),
                             torch.nn.Linear(64, 5))
    lm = lt.nn.Sequential(lt.nn.Conv2d(3, 4, 3), lt.nn.BatchNorm2d(4), lt.nn.Flatten(), lt.nn.Linear(64, 5))
    lm.load_state_dict({k: lt.from_numpy(v.detach().numpy().copy()) for k, v in tm.state_dict().items()})
    tm.to(memory_format=torch.channels_last)
    lm.to(memory_format=lt.channels_last)
    for (name, tp), (_, lp) in zip(tm.named_parameters(), lm.named_parameters()):
        assert lp.stride() == tp.stride(), name
        assert lp.is_contiguous(memory_format=lt.channels_last) == tp.is_contiguous(memory_format=torch.channels_last)
    assert_same(lm(lt.from_numpy(x)).detach(), tm(torch.from_numpy(x)).detach(), rtol=1e-5, atol=1e-5)


# Elementwise results are laid out as torch's TensorIterator lays them out: in
# the order of their operands' strides (DESIGN 15).
RESULTS = {
    "relu_of_channels_last": lambda x, m: x.to(memory_format=m.channels_last).relu(),
    "add_bias_to_channels_last": lambda x, m: x.to(memory_format=m.channels_last) + x[0, :, :1, :1],
    "mul_of_transposes": lambda x, m: x[0, 0].t() * x[1, 1].t(),
    "scalar_times_permute": lambda x, m: 2.5 * x.permute(3, 1, 0, 2),
    "gelu_chain_of_permute": lambda x, m: (x.permute(0, 2, 3, 1) * 0.5).exp().sigmoid(),
    "int_to_float_of_permute": lambda x, m: x.permute(1, 0, 3, 2).to(m.int32).float(),
    "where_of_channels_last": lambda x, m: m.where(x.to(memory_format=m.channels_last) > 10, x, -x),
    "compare_transposed_with_plain": lambda x, m: x[0].transpose(0, 2) < x[1].transpose(0, 2).contiguous(),
}


@pytest.mark.parametrize("name", sorted(RESULTS))
def test_elementwise_results_keep_torchs_layout(name):
    a = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    lx, tx = both(a)
    got, want = RESULTS[name](lx, loom), RESULTS[name](tx, torch)
    assert_same(got, want)
    assert got.stride() == want.stride()
    assert got.is_contiguous() == want.is_contiguous()
    if got.dim() == 4:
        cl = (loom.channels_last, torch.channels_last)
        assert got.is_contiguous(memory_format=cl[0]) == want.is_contiguous(memory_format=cl[1])
    # A reshape-like view of a permuted result copies, as torch's does: a
    # write through it leaves the result alone.
    flat_l, flat_t = got.flatten(), want.flatten()
    flat_l[0] = 1000
    flat_t[0] = 1000
    assert_same(got, want)


def strides_over_sizes_above_one(t):
    """The strides that place elements (none, for a tensor without any)."""
    return tuple(s for s, n in zip(t.stride(), t.shape) if n > 1 and t.numel() > 0)


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_grad_follows_accumulate_grads_layout_contract_as_torch(name):
    # A leaf's first .grad has the leaf's strides where it is dense, else it
    # is contiguous, whatever layout its backward produced; a later backward
    # adds into it in place, keeping its layout.
    a = np.linspace(-2, 2, 2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    lx, tx = both(a)
    leaves = [VIEWS[name](x, m).detach().requires_grad_() for x, m in ((lx, loom), (tx, torch))]
    for step, loss in enumerate((lambda v: (v.sigmoid() * 3).sum(),
                                 lambda v: (v.flatten().flip(0) * v.reshape(-1)).sum())):
        for v in leaves:
            loss(v).backward()
        got, want = leaves[0].grad, leaves[1].grad
        assert_same(got, want, rtol=1e-5, atol=1e-5)
        assert strides_over_sizes_above_one(got) == strides_over_sizes_above_one(want), step


def test_an_assigned_grad_keeps_its_layout_as_backward_adds_into_it():
    a = np.linspace(-1, 1, 2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    lx, tx = both(a)
    results = []
    for x, m in ((lx, loom), (tx, torch)):
        p = x.detach().requires_grad_()
        p.grad = x.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2) * 0
        (p * p).sum().backward()
        results.append(p.grad)
    assert_same(results[0], results[1])
    assert results[0].stride() == results[1].stride()


@pytest.mark.parametrize("layout", ["channels_last", "permute"])
def test_a_retained_grad_is_a_contiguous_clone_as_torchs(layout):
    a = np.linspace(-1, 1, 2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    results = []
    for x, m in zip(both(a), (loom, torch)):
        y = VIEWS[layout](x.requires_grad_(), m) * 2
        y.retain_grad()
        for _ in range(2):
            (y.sigmoid() * 3).sum().backward(retain_graph=True)
        results.append(y.grad)
    assert_same(results[0], results[1], rtol=1e-5, atol=1e-5)
    assert results[0].stride() == results[1].stride()
