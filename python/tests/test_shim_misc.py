"""The shim's torch.utils.data, torch.save/load, torch.cuda, torch.backends,
top-level functions and the errors for what it does not implement, against
real torch where torch answers too."""
import io
import math
import time

import numpy as np
import pytest
import torch

import loom.shim.torch as lt


def _pair(rng, n=10):
    x = rng.standard_normal((n, 3)).astype(np.float32)
    y = np.arange(n)
    return (torch.utils.data.TensorDataset(torch.from_numpy(x.copy()), torch.from_numpy(y.copy())),
            lt.utils.data.TensorDataset(lt.from_numpy(x.copy()), lt.from_numpy(y.copy())))


@pytest.mark.parametrize("batch_size,drop_last", [(4, False), (4, True), (5, True), (1, False), (16, False)])
def test_dataloader_batches_like_torch(batch_size, drop_last, rng):
    ds_t, ds_l = _pair(rng)
    dl_t = torch.utils.data.DataLoader(ds_t, batch_size=batch_size, drop_last=drop_last, num_workers=0)
    dl_l = lt.utils.data.DataLoader(ds_l, batch_size=batch_size, drop_last=drop_last, num_workers=2,
                                    pin_memory=True)
    assert len(dl_l) == len(dl_t)
    got, want = list(dl_l), list(dl_t)
    assert len(got) == len(want)
    for (xl, yl), (xt, yt) in zip(got, want):
        np.testing.assert_array_equal(xl.numpy(), xt.numpy())
        np.testing.assert_array_equal(yl.numpy(), yt.numpy())
        assert yl.dtype == lt.int64


def test_dataloader_shuffle_is_a_permutation_per_epoch(rng):
    _, ds = _pair(rng, 23)
    lt.manual_seed(0)
    dl = lt.utils.data.DataLoader(ds, batch_size=5, shuffle=True, drop_last=True)
    epochs = [np.concatenate([y.numpy() for _, y in dl]) for _ in range(2)]
    for seen in epochs:
        assert len(seen) == 20 and len(set(seen.tolist())) == 20 and set(seen.tolist()) <= set(range(23))
    assert epochs[0].tolist() != epochs[1].tolist()


def test_default_collate_matches_torch():
    class Pairs:
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return {"x": np.full((2,), i, np.float32), "n": i, "f": i / 2, "name": f"s{i}"}, [i, i * 2]

    for dl_t, dl_l in [(torch.utils.data.DataLoader(Pairs(), batch_size=2), lt.utils.data.DataLoader(Pairs(),
                                                                                                     batch_size=2))]:
        for (dt, lt_t), (dl, lt_l) in zip(dl_t, dl_l):
            assert dl["name"] == dt["name"]
            for k in ("x", "n", "f"):
                assert str(dl[k].dtype).split(".")[-1] == str(dt[k].dtype).split(".")[-1], k
                np.testing.assert_array_equal(dl[k].numpy(), dt[k].numpy())
            assert [a.tolist() for a in lt_l] == [a.tolist() for a in lt_t]


def test_save_load_round_trip(tmp_path):
    net = lt.nn.Sequential(lt.nn.Linear(3, 2), lt.nn.BatchNorm1d(2))
    obj = {"model": net.state_dict(), "step": 7, "lrs": [0.1, 0.2], "nested": {"t": (lt.arange(3), "x")},
           "half": lt.ones(2, 2, dtype=lt.float16) / 3, "bf16": lt.ones(3, dtype=lt.bfloat16) / 3,
           "param": lt.nn.Parameter(lt.ones(2)), "flag": lt.tensor(True)}
    path = tmp_path / "ckpt.pt"
    lt.save(obj, path)
    back = lt.load(path, map_location="cuda")
    buf = io.BytesIO()
    lt.save(obj, buf)
    buf.seek(0)
    back2 = lt.load(buf, map_location=lt.device("cpu"))
    for b in (back, back2):
        assert list(b["model"]) == list(obj["model"])
        for k, v in obj["model"].items():
            assert b["model"][k].dtype == v.dtype
            np.testing.assert_array_equal(b["model"][k].numpy(), v.numpy())
        assert b["step"] == 7 and b["lrs"] == [0.1, 0.2] and b["nested"]["t"][1] == "x"
        np.testing.assert_array_equal(b["nested"]["t"][0].numpy(), [0, 1, 2])
        assert b["half"].dtype == lt.float16 and b["bf16"].dtype == lt.bfloat16
        np.testing.assert_array_equal(b["half"].numpy(), obj["half"].numpy())
        np.testing.assert_array_equal(b["bf16"].float().numpy(), obj["bf16"].float().numpy())
        assert isinstance(b["param"], lt.nn.Parameter) and b["param"].requires_grad
        assert b["flag"].dtype == lt.bool and b["flag"].shape == ()
    other = lt.nn.Sequential(lt.nn.Linear(3, 2), lt.nn.BatchNorm1d(2))
    other.load_state_dict(back["model"])
    np.testing.assert_array_equal(other[0].weight.detach().numpy(), net[0].weight.detach().numpy())


def test_cuda_and_backends_answer_as_on_a_cpu_only_torch():
    assert lt.cuda.is_available() == torch.cuda.is_available() is False
    assert lt.cuda.device_count() == 0
    lt.backends.cudnn.benchmark = True
    lt.backends.cudnn.deterministic = False
    lt.backends.cuda.matmul.allow_tf32 = True
    assert lt.backends.cudnn.benchmark is True
    assert lt.backends.mps.is_available() is False
    start, end = lt.cuda.Event(enable_timing=True), lt.cuda.Event(enable_timing=True)
    start.record()
    time.sleep(0.02)
    end.record()
    lt.cuda.synchronize()
    assert 15 <= start.elapsed_time(end) < 2000
    with pytest.raises(RuntimeError):
        lt.cuda.Event().elapsed_time(lt.cuda.Event())


def test_top_level_functions_match_torch():
    for name, args in (("linspace", (0.0, 1.0, 5)), ("eye", (3, 4)), ("zeros", ((2, 3),)), ("arange", (1, 7, 2))):
        got, want = getattr(lt, name)(*args), getattr(torch, name)(*args)
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], name
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-7, err_msg=name)
    a = np.linspace(-2, 2, 7).astype(np.float32)
    for fn in ("exp", "tanh", "square"):
        np.testing.assert_allclose(getattr(lt, fn)(lt.from_numpy(a)).numpy(),
                                   getattr(torch, fn)(torch.from_numpy(a)).numpy(), rtol=1e-6)
    np.testing.assert_array_equal(lt.tensor(3).numpy(), torch.tensor(3).numpy())
    assert lt.tensor(3).shape == () and lt.tensor(2.5).shape == ()
    assert lt.is_tensor(lt.ones(1)) and not lt.is_tensor(1.0)
    with lt.no_grad():
        assert not lt.is_grad_enabled()
    x = lt.ones(2, requires_grad=True)
    assert x.device == lt.device("cpu") and not x.is_cuda


def test_unsupported_api_raises_not_implemented_naming_it():
    with pytest.raises(NotImplementedError, match=r"^torch\.fft is not supported by loom$"):
        lt.fft.rfft(lt.ones(4))
    with pytest.raises(NotImplementedError, match=r"torch\.nn\.functional\.grid_sample is not supported by loom"):
        lt.nn.functional.grid_sample
    with pytest.raises(NotImplementedError, match=r"torch\.nn\.Bilinear is not supported by loom"):
        lt.nn.Bilinear
    with pytest.raises(NotImplementedError, match=r"torch\.optim\.lr_scheduler\.CyclicLR is not supported"):
        lt.optim.lr_scheduler.CyclicLR
    with pytest.raises(NotImplementedError, match=r"torch\.Tensor\.to_sparse is not supported by loom"):
        lt.ones(2).to_sparse()
    with pytest.raises(NotImplementedError, match=r"torch\.cuda\.amp is not supported by loom"):
        lt.cuda.amp.autocast()
    # hasattr/getattr with a default still answer, as for a torch build without the feature
    assert not hasattr(lt, "fft") and getattr(lt.backends, "xnnpack", None) is None
    with pytest.raises(AttributeError):
        lt.__wrapped__  # dunder probes stay AttributeErrors for the import machinery


_IMPORT_LEAVES_LOOM_AS_IT_WAS = """
import loom
tensor_attrs, dtype_attrs = dict(vars(loom.Tensor)), dict(vars(loom.dtype))
before = loom.ones(2)
import loom.shim.torch as lt
assert dict(vars(loom.Tensor)) == tensor_attrs and dict(vars(loom.dtype)) == dtype_attrs
assert repr(loom.float32) == "loom.float32" and repr(lt.float32) == "torch.float32"
# a tensor made before the import stays a loom.Tensor, whose missing names are AttributeErrors
assert type(before) is loom.Tensor and not isinstance(before, lt.Tensor)
try:
    before.to_sparse
    raise SystemExit("no error")
except AttributeError as e:
    assert not isinstance(e, NotImplementedError), e
# what the engine returns now is a torch.Tensor, a subclass of loom.Tensor, with torch's dtype objects
after = before + 1
assert type(after) is lt.Tensor and issubclass(lt.Tensor, loom.Tensor) and lt.Tensor is not loom.Tensor
assert after.dtype is lt.float32 and after.dtype == loom.float32 and {loom.float32: 1}[after.dtype] == 1
print("ok")
"""


def test_importing_the_shim_leaves_loom_tensor_and_dtype_as_they_were():
    import subprocess
    import sys
    run = subprocess.run([sys.executable, "-c", _IMPORT_LEAVES_LOOM_AS_IT_WAS], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr


def test_dtypes_print_as_torchs():
    for name in ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool"):
        want, got = getattr(torch, name), getattr(lt, name)
        assert (str(got), repr(got), f"{got}") == (str(want), repr(want), f"{want}")
    assert str(lt.zeros(2).dtype) == "torch.float32"
    assert lt.zeros(2).dtype is lt.float32 and lt.ones(1, dtype=lt.float16).dtype is lt.float16
    assert type(lt.zeros(2)).__module__ == "torch" and type(lt.zeros(2)).__name__ == "Tensor"


@pytest.mark.parametrize("method", ["register_buffer", "register_parameter", "add_module"])
@pytest.mark.parametrize("name", ["a.b", "", 5, "ok"])
def test_registered_names_are_checked_as_torch_checks_them(method, name):
    def attempt(t):
        value = {"register_buffer": lambda: t.zeros(1), "register_parameter": lambda: None,
                 "add_module": lambda: t.nn.Identity()}[method]()
        try:
            getattr(t.nn.Module(), method)(name, value)
            return None
        except Exception as e:  # the type and message are what is compared
            return type(e).__name__, str(e)
    assert attempt(lt) == attempt(torch)


def test_grad_of_an_unused_input_is_none_with_allow_unused():
    def grads(t):
        x = t.ones(2, requires_grad=True)
        y = t.ones(2, requires_grad=True)
        return t.autograd.grad((x * 2).sum(), [x, y], allow_unused=True)
    want, got = grads(torch), grads(lt)
    assert got[1] is None and want[1] is None
    np.testing.assert_array_equal(got[0].numpy(), want[0].numpy())
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        lt.autograd.grad((lt.ones(2, requires_grad=True) * 2).sum(), [lt.ones(2, requires_grad=True)])


def _rng_behaviour(m):
    """What repeats and what is independent, as booleans (the numbers themselves differ by design)."""
    m.manual_seed(3)
    state = m.get_rng_state()
    a = m.rand(3).tolist()
    m.set_rng_state(state)
    repeats = m.rand(3).tolist() == a
    g = m.Generator().manual_seed(7)
    m.manual_seed(0)
    r1 = m.rand(2).tolist()
    m.manual_seed(0)
    x = m.randn(4, generator=g).tolist()
    perm = m.randperm(6, generator=g).tolist()
    untouched = m.rand(2).tolist() == r1
    g2 = m.Generator().manual_seed(7)
    same_seed = m.randn(4, generator=g2).tolist() == x and m.randperm(6, generator=g2).tolist() == perm
    g_state = g.get_state()
    after = m.rand(5, generator=g).tolist()
    again = m.rand(5, generator=g.set_state(g_state)).tolist() == after
    ds = m.utils.data.TensorDataset(m.arange(20))
    orders = [[int(b[0][0]) for b in m.utils.data.DataLoader(ds, batch_size=4, shuffle=True,
                                                             generator=m.Generator().manual_seed(11))]
              for _ in range(2)]
    splits = [[list(s.indices) for s in m.utils.data.random_split(range(10), [3, 7], m.Generator().manual_seed(2))]
              for _ in range(2)]
    return (repeats, untouched, same_seed, again, orders[0] == orders[1], splits[0] == splits[1],
            state.dtype == m.uint8, m.Generator().initial_seed(), g.initial_seed())


def test_rng_state_and_generators_behave_as_torchs():
    assert _rng_behaviour(lt) == _rng_behaviour(torch)
    for m in (torch, lt):
        with pytest.raises(TypeError, match="RNG state must be a torch.ByteTensor"):
            m.set_rng_state(m.ones(3))
        with pytest.raises(RuntimeError, match="found the input RNG state size to be 3"):
            m.set_rng_state(m.zeros(3, dtype=m.uint8))
